// Queue benchmarks (issue 6). Every ratio compares redcoord against the same Redis commands
// sent with plain hiredis in the same run, against the same local redis-server:
//   reliable_queue_1c_vs_raw: queue_worker (1 thread; each ack carries the next pop,
//                   reliable_queue::ack_and_pop)
//                   vs  BLMOVE + LREM per message, on a queue filled 100 at a time
//   reliable_queue: push + pop + ack  vs  LPUSH + BLMOVE + LREM   (1 and 4 consumers:
//                   reliable_queue_push_pop_ack_1c_vs_raw, reliable_queue_4c_vs_raw)
//   list_queue:     push + pop        vs  LPUSH + RPOP (BRPOP when empty), as list_queue sends
// plus the enveloped batch-push rate. Each pair runs interleaved, five rounds; each ratio is
// the median of the five per-round ratios.

#include "common.hpp"

#include <redcoord/queue/list_queue.hpp>
#include <redcoord/queue/queue_worker.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std::chrono_literals;

namespace {

redcoord::testing::local_server* server = nullptr;
std::unique_ptr<redcoord::connection_pool> pool;
const std::string payload(64, 'p');
constexpr int rounds = 5;

struct raw_conn {
    redisContext* c;
    raw_conn() : c(redisConnect("127.0.0.1", server->port())) {
        if (!c || c->err) throw std::runtime_error("hiredis connect failed");
    }
    ~raw_conn() { redisFree(c); }
    redisReply* run(std::vector<std::string> argv) {
        std::vector<const char*> p;
        std::vector<size_t> l;
        for (auto& a : argv) {
            p.push_back(a.data());
            l.push_back(a.size());
        }
        auto* r = static_cast<redisReply*>(
            redisCommandArgv(c, static_cast<int>(argv.size()), p.data(), l.data()));
        if (!r) throw std::runtime_error("hiredis command failed");
        return r;
    }
};

void raw_reliable(benchmark::State& state) {
    raw_conn rc;
    const std::string q = "raw:reliable",
                      proc = "raw:processing:" + std::to_string(state.thread_index());
    for (auto _ : state) {
        freeReplyObject(rc.run({"LPUSH", q, payload}));
        auto* m = rc.run({"BLMOVE", q, proc, "RIGHT", "LEFT", "1"});
        std::string element(m->str, m->len);
        freeReplyObject(m);
        freeReplyObject(rc.run({"LREM", proc, "1", element}));
    }
    state.SetItemsProcessed(state.iterations());
}

void ours_reliable(benchmark::State& state) {
    // Each consumer has its own pool, as separate consumer processes would (and as each raw
    // thread has its own connection): one connection for the worker, one for the heartbeat.
    redcoord::connection_pool own(server->endpoint(), {.max_size = 2});
    redcoord::reliable_queue q(own, "bench-reliable");
    if (auto d = q.try_pop()) (void)q.ack(*d);  // registers the consumer outside the timing
    for (auto _ : state) {
        q.push(payload);
        auto d = q.pop(1s);
        if (!d || !q.ack(*d)) state.SkipWithError("lost a message");
    }
    state.SetItemsProcessed(state.iterations());
}

// Consumers of a filled queue, one message at a time: the raw client's pop-then-ack loop
// (BLMOVE, then LREM: two round trips a message) against queue_worker, whose ack carries
// the next pop (reliable_queue::ack_and_pop: one). Each iteration fills the queue with
// `consume_batch` messages in one LPUSH, as a producer would, and waits until all are handled.
constexpr std::int64_t consume_batch = 100;

void raw_consume(benchmark::State& state) {
    raw_conn rc;
    const std::string q = "raw:consume", proc = "raw:consume:processing";
    std::vector<std::string> fill{"LPUSH", q};
    fill.insert(fill.end(), consume_batch, payload);
    for (auto _ : state) {
        freeReplyObject(rc.run(fill));
        for (std::int64_t i = 0; i < consume_batch; ++i) {
            auto* m = rc.run({"BLMOVE", q, proc, "RIGHT", "LEFT", "1"});
            std::string element(m->str, m->len);
            freeReplyObject(m);
            freeReplyObject(rc.run({"LREM", proc, "1", element}));
        }
    }
    state.SetItemsProcessed(state.iterations() * consume_batch);
}

void ours_consume(benchmark::State& state) {
    redcoord::connection_pool own(server->endpoint(), {.max_size = 3});
    redcoord::reliable_queue q(own, "bench-consume");
    if (auto d = q.try_pop()) (void)q.ack(*d);  // registers the consumer outside the timing
    std::mutex mu;
    std::condition_variable cv;
    std::int64_t handled = 0, want = 0;
    redcoord::queue_worker w(q,
                             [&](const redcoord::delivery&) {
                                 std::lock_guard lk(mu);
                                 if (++handled == want) cv.notify_one();
                                 return redcoord::handler_result::ack;
                             },
                             {.threads = 1, .poll_timeout = std::chrono::seconds(1)});
    w.start();
    const std::vector<std::string> fill(consume_batch, payload);
    for (auto _ : state) {
        {
            std::lock_guard lk(mu);
            want += consume_batch;
        }
        (void)q.push_batch(fill);
        std::unique_lock lk(mu);
        if (!cv.wait_for(lk, std::chrono::seconds(10), [&] { return handled >= want; }))
            state.SkipWithError("lost a message");
    }
    w.stop();
    state.SetItemsProcessed(state.iterations() * consume_batch);
}

void raw_list(benchmark::State& state) {
    raw_conn rc;
    for (auto _ : state) {
        freeReplyObject(rc.run({"LPUSH", "raw:list", payload}));
        // The same commands list_queue::pop sends: RPOP, and BRPOP only when it was empty.
        auto* r = rc.run({"RPOP", "raw:list"});
        bool empty = r->type == REDIS_REPLY_NIL;
        freeReplyObject(r);
        if (empty) freeReplyObject(rc.run({"BRPOP", "raw:list", "1"}));
    }
    state.SetItemsProcessed(state.iterations());
}

void ours_list(benchmark::State& state) {
    redcoord::list_queue q(*pool, "bench-list");
    for (auto _ : state) {
        q.push(payload);
        if (!q.pop(1s)) state.SkipWithError("lost a message");
    }
    state.SetItemsProcessed(state.iterations());
}

void batch_push(benchmark::State& state) {
    redcoord::reliable_queue q(*pool, "bench-batch");
    std::vector<std::string> batch(1000, payload);
    std::int64_t n = 0;
    for (auto _ : state) {
        (void)q.push_batch(batch);
        if (++n % 200 == 0) {  // keep the server's memory flat
            state.PauseTiming();
            pool->command({"DEL", q.key()});
            state.ResumeTiming();
        }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch.size()));
    pool->command({"DEL", q.key()});
}

double rate(const std::map<std::string, redcoord::bench::result>& res, const std::string& name,
            int round) {
    for (auto& [k, x] : res)
        if (k.rfind(name + "/round:" + std::to_string(round), 0) == 0) return x.items_per_second;
    return 0;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// The load of a shared 2-core box swings within seconds, so each round's pair (run back to
// back) gives one ratio and the median of those is reported.
double paired_ratio(const std::map<std::string, redcoord::bench::result>& res,
                    const std::string& ours, const std::string& raw) {
    std::vector<double> v;
    for (int r = 0; r < rounds; ++r) {
        double a = rate(res, ours, r), b = rate(res, raw, r);
        if (a > 0 && b > 0) v.push_back(a / b);
    }
    return median(v);
}

}  // namespace

int main(int argc, char** argv) {
    redcoord::testing::local_server srv;
    server = &srv;
    pool = std::make_unique<redcoord::connection_pool>(srv.endpoint(),
                                                       redcoord::pool_options{.max_size = 16});

    for (int r = 0; r < rounds; ++r) {
        const std::string round = "/round:" + std::to_string(r);
        for (int threads : {1, 4}) {
            const std::string t = "/c" + std::to_string(threads);
            benchmark::RegisterBenchmark(("raw_reliable" + t + round).c_str(), raw_reliable)
                ->Threads(threads)
                ->UseRealTime()
                ->MinTime(0.3);
            benchmark::RegisterBenchmark(("reliable_queue" + t + round).c_str(), ours_reliable)
                ->Threads(threads)
                ->UseRealTime()
                ->MinTime(0.3);
        }
        benchmark::RegisterBenchmark(("raw_consume" + round).c_str(), raw_consume)
            ->UseRealTime()
            ->MinTime(0.3);
        benchmark::RegisterBenchmark(("worker_consume" + round).c_str(), ours_consume)
            ->UseRealTime()
            ->MinTime(0.3);
        benchmark::RegisterBenchmark(("raw_list" + round).c_str(), raw_list)
            ->UseRealTime()
            ->MinTime(0.3);
        benchmark::RegisterBenchmark(("list_queue" + round).c_str(), ours_list)
            ->UseRealTime()
            ->MinTime(0.3);
    }
    for (int r = 0; r < rounds; ++r)
        benchmark::RegisterBenchmark(("batch_push/round:" + std::to_string(r)).c_str(), batch_push)
            ->UseRealTime()
            ->MinTime(0.3);

    auto res = redcoord::bench::run_benchmarks(argc, argv);
    if (std::getenv("QUEUE_BENCH_STATS"))
        std::fprintf(stderr, "%s\n", srv.command({"INFO", "commandstats"}).text().c_str());
    using redcoord::bench::print_ratio;
    print_ratio("reliable_queue_1c_vs_raw", paired_ratio(res, "worker_consume", "raw_consume"));
    print_ratio("reliable_queue_push_pop_ack_1c_vs_raw",
                paired_ratio(res, "reliable_queue/c1", "raw_reliable/c1"));
    print_ratio("reliable_queue_4c_vs_raw",
                paired_ratio(res, "reliable_queue/c4", "raw_reliable/c4"));
    std::vector<double> batch;
    for (int r = 0; r < rounds; ++r) batch.push_back(rate(res, "batch_push", r));
    redcoord::bench::print_value("queue_batch_push_per_s", median(batch), "msg/s");
    print_ratio("list_queue_vs_raw", paired_ratio(res, "list_queue", "raw_list"));
    pool.reset();
    return 0;
}
