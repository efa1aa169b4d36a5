// Election numbers, measured on real redis-servers in this run:
//   value election_resign_handoff_ms       p50 of 20 resigns: resign() returning -> the new
//                                          leader's `elected` callback (3 candidates, 5 s term)
//   value election_crash_failover_ms       p50 of 10 SIGKILLs of the leader (a child process,
//                                          1 s term): kill -> another child's `elected`
//   value election_round_trips_per_term    campaign rounds per candidate per term (4 candidates)
//   ratio election_round_vs_raw_seed       one hardened round (one EVALSHA) per second / the
//                                          literal algorithm's INCR + EXPIRE (docs/election.md)
//                                          with plain hiredis per second
#include "common.hpp"

#include "../../tests/fault/election/child_log.hpp"

#include <redcoord/election/leader_elector.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>

#include <condition_variable>
#include <iostream>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;
using redcoord::testing::local_server;

namespace {

local_server* server;

void hardened_round(benchmark::State& st) {
    redcoord::connection_pool pool(server->endpoint());
    redcoord::election_options o;
    o.identity = "bench";
    redcoord::master_selector s(pool, "bench_round", o);
    for (auto _ : st) benchmark::DoNotOptimize(s.campaign_once());
    st.SetItemsProcessed(st.iterations());
}

void raw_seed_round(benchmark::State& st) {
    auto* c = redisConnect("127.0.0.1", server->port());
    if (!c || c->err) throw std::runtime_error("raw connect failed");
    const char* incr[] = {"INCR", "bench_seed_selector"};
    const char* expire[] = {"EXPIRE", "bench_seed_selector", "20"};
    for (auto _ : st) {
        // The literal algorithm's master(): INCR, then EXPIRE when leading (the first caller always leads).
        freeReplyObject(redisCommandArgv(c, 2, incr, nullptr));
        freeReplyObject(redisCommandArgv(c, 3, expire, nullptr));
    }
    st.SetItemsProcessed(st.iterations());
    redisFree(c);
}

BENCHMARK(hardened_round)->MinTime(1.0)->UseRealTime();
BENCHMARK(raw_seed_round)->MinTime(1.0)->UseRealTime();

double ms(clk::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// p50 of resign() returning -> the next leader's `elected`.
double resign_handoff_ms(int samples) {
    redcoord::connection_pool pool(server->endpoint());
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::pair<int, clk::time_point>> elected;  // (candidate, when)
    std::vector<std::unique_ptr<redcoord::leader_elector>> es;
    std::vector<boost::signals2::scoped_connection> slots;  // dropped before the electors
    for (int i = 0; i < 3; ++i) {
        redcoord::election_options o;
        o.identity = "r" + std::to_string(i);
        o.term = 5s;  // a long term: only the handoff signal explains a quick takeover
        es.push_back(std::make_unique<redcoord::leader_elector>(pool, "bench_handoff", o));
        slots.push_back(es.back()->on_elected([&, i](std::uint64_t) {
            std::lock_guard g(mu);
            elected.emplace_back(i, clk::now());
            cv.notify_all();
        }));
        es.back()->start();
    }
    std::vector<double> sample, from_call;
    std::this_thread::sleep_for(500ms);  // every follower subscribed
    for (int n = 0; n < samples; ++n) {
        int leader = -1;
        for (int w = 0; w < 400 && leader < 0; ++w) {
            for (int i = 0; i < 3; ++i)
                if (es[i]->is_leader()) leader = i;
            if (leader < 0) std::this_thread::sleep_for(5ms);
        }
        if (leader < 0) break;
        std::size_t seen;
        {
            std::lock_guard g(mu);
            seen = elected.size();
        }
        const auto called = clk::now();
        es[leader]->resign();
        const auto returned = clk::now();
        std::unique_lock lk(mu);
        const bool ok = cv.wait_for(lk, 3s, [&] {
            for (auto k = seen; k < elected.size(); ++k)
                if (elected[k].first != leader) return true;
            return false;
        });
        if (!ok) continue;
        for (auto k = seen; k < elected.size(); ++k)
            if (elected[k].first != leader) {
                // The follower's round may finish before resign() returns to its caller.
                sample.push_back(std::max(0.0, ms(elected[k].second - returned)));
                from_call.push_back(ms(elected[k].second - called));
                break;
            }
        lk.unlock();
        std::this_thread::sleep_for(30ms);
    }
    for (auto& e : es) e->stop();
    std::cerr << "resign handoff: " << sample.size() << " samples; p50 from the resign() call "
              << redcoord::bench::percentile(from_call, 50) << " ms\n";
    return redcoord::bench::percentile(sample, 50);
}

struct child {
    std::string log;
    std::unique_ptr<redcoord::testing::process> proc;
};

child spawn(int id, std::chrono::milliseconds term) {
    child c{(server->dir() / ("crash" + std::to_string(id) + ".log")).string(), nullptr};
    redcoord::testing::process_options po;
    po.output_file = c.log;
    c.proc = std::make_unique<redcoord::testing::process>(
        std::vector<std::string>{CHILD_PATH, std::to_string(server->port()), "bench_crash",
                                 "c" + std::to_string(id), std::to_string(term.count()), "120"},
        po);
    return c;
}

// p50 of SIGKILL of the leading child -> another child's `elected`.
double crash_failover_ms(int samples, std::chrono::milliseconds term) {
    std::vector<child> cs;
    int next_id = 0;
    for (int i = 0; i < 3; ++i) cs.push_back(spawn(next_id++, term));
    auto elected_after = [&](std::size_t i,
                             clk::time_point after) -> std::optional<clk::time_point> {
        for (auto& l : election_test::read_log(cs[i].log))
            if (l.kind == 'E' && l.at > after) return l.at;
        return std::nullopt;
    };
    std::vector<double> sample;
    auto since = clk::time_point{};
    for (int n = 0; n < samples; ++n) {
        // Find the current leader: the latest elected after `since`.
        int leader = -1;
        for (int w = 0; w < 1000 && leader < 0; ++w) {
            for (std::size_t i = 0; i < cs.size(); ++i)
                if (cs[i].proc && cs[i].proc->running() && elected_after(i, since))
                    leader = static_cast<int>(i);
            if (leader < 0) std::this_thread::sleep_for(5ms);
        }
        if (leader < 0) break;
        std::this_thread::sleep_for(term / 2);  // a steady state: renewals running
        const auto killed = clk::now();
        cs[leader].proc->kill();
        cs[leader].proc.reset();
        std::optional<clk::time_point> got;
        for (int w = 0; w < 1000 && !got; ++w) {
            for (std::size_t i = 0; i < cs.size() && !got; ++i)
                if (cs[i].proc) got = elected_after(i, killed);
            if (!got) std::this_thread::sleep_for(2ms);
        }
        if (!got) break;
        sample.push_back(ms(*got - killed));
        since = killed;
        cs.push_back(spawn(next_id++, term));  // keep two followers
    }
    std::cerr << "crash failover: " << sample.size() << " samples\n";
    return redcoord::bench::percentile(sample, 50);
}

// Campaign rounds per candidate per term, with 4 candidates over `terms` terms.
double round_trips_per_term(int terms, std::chrono::milliseconds term) {
    redcoord::connection_pool pool(server->endpoint());
    std::vector<std::unique_ptr<redcoord::leader_elector>> es;
    for (int i = 0; i < 4; ++i) {
        redcoord::election_options o;
        o.identity = "t" + std::to_string(i);
        o.term = term;
        es.push_back(std::make_unique<redcoord::leader_elector>(pool, "bench_rounds", o));
    }
    for (auto& e : es) e->start();
    std::this_thread::sleep_for(term);  // past start-up
    std::vector<std::uint64_t> before;
    for (auto& e : es) before.push_back(e->rounds());
    std::this_thread::sleep_for(term * terms);
    double total = 0;
    for (std::size_t i = 0; i < es.size(); ++i)
        total += static_cast<double>(es[i]->rounds() - before[i]);
    for (auto& e : es) e->stop();
    return total / static_cast<double>(es.size()) / terms;
}

}  // namespace

int main(int argc, char** argv) {
    local_server srv;
    server = &srv;
    auto results = redcoord::bench::run_benchmarks(argc, argv);
    const double handoff = resign_handoff_ms(20);
    const double failover = crash_failover_ms(10, 1000ms);
    const double rounds = round_trips_per_term(10, 600ms);
    redcoord::bench::print_value("election_resign_handoff_ms", handoff, "ms");
    redcoord::bench::print_value("election_crash_failover_ms", failover, "ms");
    redcoord::bench::print_value("election_round_trips_per_term", rounds, "round_trips");
    auto ours = results.find("hardened_round"), raw = results.find("raw_seed_round");
    if (ours != results.end() && raw != results.end() && raw->second.items_per_second > 0)
        redcoord::bench::print_ratio("election_round_vs_raw_seed",
                                     ours->second.items_per_second / raw->second.items_per_second);
    return 0;
}
