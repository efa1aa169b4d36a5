#pragma once
// The fault-schedule tests' shared steps: skip (saying why) where namespaces cannot be made,
// and run a schedule, print its one-line summary and check that its clients finished.

#include <redcoord/testing/local_network.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#define CHAOS_SKIP_WITHOUT_NAMESPACES()                                        \
    do {                                                                       \
        if (auto why = redcoord::testing::local_network::unavailable_reason()) \
            GTEST_SKIP() << *why;                                              \
    } while (0)

namespace chaos {

// Runs `s` with `run_one(s, client_path)`, prints its summary and checks its clients finished.
template <class Schedule, class Run>
auto run_printed(const char* part, const Schedule& s, const std::string& client_path, Run run_one) {
    auto o = run_one(s, client_path);
    std::printf("chaos %s [%s] seed %u: %s\n", part, s.family.c_str(), s.seed, o.summary().c_str());
    EXPECT_TRUE(o.clients_finished) << "a client did not finish";
    return o;
}

// The same with the part's run(schedule, client_path).
template <class Schedule>
auto run_printed(const char* part, const Schedule& s, const std::string& client_path) {
    return run_printed(part, s, client_path,
                       [](const Schedule& x, const std::string& path) { return run(x, path); });
}

}  // namespace chaos
