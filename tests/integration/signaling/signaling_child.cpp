// Child process for the multi-process signaling tests. Modes (ports of 127.0.0.1 servers):
//   waiters <master> <replica> <channel> <n_waiters> <n_signals> <ready_key>
//       n waiters on <channel> over master+replica; INCR <ready_key> once every link is
//       subscribed; then each waiter must get payloads 0..n_signals-1 exactly once, in order.
//   barrier <master> <name> <parties> <rounds>
//       arrive_and_wait <rounds> times; generations must advance by one each round.
//   arrive <master> <name> <parties> <lease_ms>
//       one arrival with a long timeout (the parent SIGKILLs it while it waits).
//   arrive_report <master> <name> <parties> <lease_ms> <result_key>
//       one arrival with a long timeout; SETs <result_key> to "passed:<gen>" or
//       "error:<what>" (the parent SIGSTOPs/SIGCONTs it while it waits).
//   enter_report <master> <name> <parties> <lease_ms> <result_key>
//       double_barrier enter() with a long timeout; SETs <result_key> to "inside" or
//       "error:<what>"; once inside it stays inside (until the parent SIGKILLs it).
// Exit status 0 on success; a reason on stderr otherwise.
#include <redcoord/core/pool.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/double_barrier.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {
// A server given by URL (with its TLS options when the test runs over TLS) or by port.
redcoord::endpoint at(const char* where) {
    if (std::string_view(where).find("://") != std::string_view::npos)
        return redcoord::parse_endpoint(where);
    redcoord::endpoint ep;
    ep.port = static_cast<std::uint16_t>(std::stoi(where));
    return ep;
}

int fail(const std::string& why) {
    std::fprintf(stderr, "signaling_child: %s\n", why.c_str());
    return 1;
}

int run_waiters(char** argv) {
    redcoord::connection_pool pool(at(argv[2]));
    redcoord::signal_hub hub(pool, {at(argv[3])});
    const std::string channel = argv[4];
    const int n_waiters = std::stoi(argv[5]), n_signals = std::stoi(argv[6]);
    std::vector<redcoord::waiter> ws;
    for (int i = 0; i < n_waiters; ++i) ws.push_back(hub.listen({channel}));
    for (int i = 0; i < 1000 && hub.connected_links() < 2; ++i) std::this_thread::sleep_for(10ms);
    if (hub.connected_links() < 2) return fail("links not up");
    (void)pool.command({"INCR", argv[7]});
    for (int i = 0; i < n_waiters; ++i) {
        for (int k = 0; k < n_signals; ++k) {
            auto s = ws[i].wait(20000ms);
            if (!s)
                return fail("waiter " + std::to_string(i) + " timed out at signal " +
                            std::to_string(k));
            if (s->payload != std::to_string(k))
                return fail("waiter " + std::to_string(i) + " expected " + std::to_string(k) +
                            ", got " + s->payload);
        }
    }
    // Every signal must come over both links too (the replica's copy is dropped, once per hub).
    for (int i = 0; i < 500 && hub.stats().duplicates < static_cast<std::uint64_t>(n_signals); ++i)
        std::this_thread::sleep_for(10ms);
    std::this_thread::sleep_for(100ms);
    for (int i = 0; i < n_waiters; ++i)
        if (ws[i].pending() != 0) return fail("waiter " + std::to_string(i) + " got extra signals");
    auto st = hub.stats();
    if (st.duplicates != static_cast<std::uint64_t>(n_signals))
        return fail("expected " + std::to_string(n_signals) + " dropped copies, saw " +
                    std::to_string(st.duplicates) + " (received " + std::to_string(st.received) +
                    ", links up " + std::to_string(hub.connected_links()) + ")");
    return 0;
}

int run_barrier(char** argv) {
    redcoord::connection_pool pool(at(argv[2]));
    redcoord::signal_hub hub(pool);
    redcoord::barrier b(hub, argv[3], std::stoul(argv[4]));
    const int rounds = std::stoi(argv[5]);
    std::uint64_t first = 0;
    for (int r = 0; r < rounds; ++r) {
        auto gen = b.arrive_and_wait(20000ms);
        if (r == 0) first = gen;
        if (gen != first + static_cast<std::uint64_t>(r))
            return fail("round " + std::to_string(r) + " passed generation " + std::to_string(gen));
    }
    return 0;
}

int run_arrive(char** argv) {
    redcoord::connection_pool pool(at(argv[2]));
    redcoord::signal_hub hub(pool);
    redcoord::barrier_options o;
    o.arrival_lease = std::chrono::milliseconds(std::stoi(argv[5]));
    redcoord::barrier b(hub, argv[3], std::stoul(argv[4]), o);
    (void)b.arrive_and_wait(60000ms);
    return 0;
}
redcoord::barrier_options lease_of(const char* ms) {
    redcoord::barrier_options o;
    o.arrival_lease = std::chrono::milliseconds(std::stoi(ms));
    return o;
}

int run_arrive_report(char** argv) {
    redcoord::connection_pool pool(at(argv[2]));
    redcoord::signal_hub hub(pool);
    redcoord::barrier b(hub, argv[3], std::stoul(argv[4]), lease_of(argv[5]));
    std::string result;
    try {
        result = "passed:" + std::to_string(b.arrive_and_wait(60000ms));
    } catch (const std::exception& e) {
        result = std::string("error:") + e.what();
    }
    (void)pool.command({"SET", argv[6], result});
    return 0;
}

int run_enter_report(char** argv) {
    redcoord::connection_pool pool(at(argv[2]));
    redcoord::signal_hub hub(pool);
    redcoord::double_barrier b(hub, argv[3], std::stoul(argv[4]), lease_of(argv[5]));
    try {
        b.enter(60000ms);
    } catch (const std::exception& e) {
        (void)pool.command({"SET", argv[6], std::string("error:") + e.what()});
        return 0;
    }
    (void)pool.command({"SET", argv[6], "inside"});
    std::this_thread::sleep_for(60s);
    return 0;
}
}  // namespace

int main(int argc, char** argv) {
    try {
        const std::string mode = argc > 1 ? argv[1] : "";
        if (mode == "waiters" && argc == 8) return run_waiters(argv);
        if (mode == "barrier" && argc == 6) return run_barrier(argv);
        if (mode == "arrive" && argc == 6) return run_arrive(argv);
        if (mode == "arrive_report" && argc == 7) return run_arrive_report(argv);
        if (mode == "enter_report" && argc == 7) return run_enter_report(argv);
        return fail("bad arguments");
    } catch (const std::exception& e) {
        return fail(e.what());
    }
}
