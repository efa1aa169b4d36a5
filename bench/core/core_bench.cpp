// Core overhead against plain hiredis on the same server in the same run:
//   ratio core_command_vs_raw     pool.command(SET) per second / raw redisCommandArgv(SET) per second
//   ratio core_fan_out5_vs_raw    fan_out(PING) to 5 servers / raw "send to 5, poll for 5" per second
#include "common.hpp"

#include <redcoord/core/fan_out.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/testing/local_server.hpp>

#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>
#include <poll.h>

#include <memory>

namespace {

std::vector<std::unique_ptr<redcoord::testing::local_server>>* servers;

redisContext* raw_connect(std::uint16_t port) {
    auto* c = redisConnect("127.0.0.1", port);
    if (!c || c->err) throw std::runtime_error("raw connect failed");
    return c;
}

void raw_set(benchmark::State& st) {
    auto* c = raw_connect((*servers)[0]->port());
    const char* argv[] = {"SET", "bench:k", "value"};
    for (auto _ : st) {
        auto* r = static_cast<redisReply*>(redisCommandArgv(c, 3, argv, nullptr));
        benchmark::DoNotOptimize(r);
        freeReplyObject(r);
    }
    st.SetItemsProcessed(st.iterations());
    redisFree(c);
}

void pool_set(benchmark::State& st) {
    redcoord::connection_pool pool((*servers)[0]->endpoint());
    for (auto _ : st) benchmark::DoNotOptimize(pool.command({"SET", "bench:k", "value"}));
    st.SetItemsProcessed(st.iterations());
}

void raw_fan_out5(benchmark::State& st) {
    std::vector<redisContext*> cs;
    for (auto& s : *servers) cs.push_back(raw_connect(s->port()));
    const char* argv[] = {"PING"};
    for (auto _ : st) {
        for (auto* c : cs) {
            redisAppendCommandArgv(c, 1, argv, nullptr);
            int done = 0;
            while (!done) redisBufferWrite(c, &done);
        }
        std::size_t got = 0;
        while (got < cs.size()) {
            std::vector<pollfd> fds;
            for (auto* c : cs) fds.push_back({c->fd, POLLIN, 0});
            ::poll(fds.data(), fds.size(), 1000);
            for (std::size_t i = 0; i < cs.size(); ++i) {
                if (!fds[i].revents) continue;
                redisBufferRead(cs[i]);
                void* r = nullptr;
                while (redisGetReplyFromReader(cs[i], &r) == REDIS_OK && r) {
                    freeReplyObject(r);
                    ++got;
                }
            }
        }
    }
    st.SetItemsProcessed(st.iterations());
    for (auto* c : cs) redisFree(c);
}

void redcoord_fan_out5(benchmark::State& st) {
    std::vector<std::unique_ptr<redcoord::connection_pool>> pools;
    std::vector<redcoord::connection_pool*> ptrs;
    for (auto& s : *servers) {
        pools.push_back(std::make_unique<redcoord::connection_pool>(s->endpoint()));
        ptrs.push_back(pools.back().get());
    }
    for (auto _ : st)
        benchmark::DoNotOptimize(
            redcoord::fan_out(ptrs, {"PING"}, {.timeout = std::chrono::milliseconds(1000)}));
    st.SetItemsProcessed(st.iterations());
}

BENCHMARK(raw_set)->MinTime(2);
BENCHMARK(pool_set)->MinTime(2);
BENCHMARK(raw_fan_out5)->MinTime(2);
BENCHMARK(redcoord_fan_out5)->MinTime(2);

}  // namespace

int main(int argc, char** argv) {
    auto s = redcoord::testing::start_masters(5);
    servers = &s;
    auto r = redcoord::bench::run_benchmarks(argc, argv);
    auto ratio = [&](const char* ours, const char* raw) {
        return r[raw].items_per_second > 0 ? r[ours].items_per_second / r[raw].items_per_second
                                           : 0.0;
    };
    redcoord::bench::print_ratio("core_command_vs_raw", ratio("pool_set", "raw_set"));
    redcoord::bench::print_ratio("core_fan_out5_vs_raw",
                                 ratio("redcoord_fan_out5", "raw_fan_out5"));
    redcoord::bench::print_value("core_command_per_s", r["pool_set"].items_per_second, "ops/s");
    return 0;
}
