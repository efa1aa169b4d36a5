// Electors of one process share the runtime's timer thread (issue 15). A round blocked on a
// paused server must not cost an elector of another server its leadership: every round's
// reply wait is bounded by the retry period (and a leader's by its lease end).
#include "../../integration/election/event_log.hpp"
#include <redcoord/core/runtime.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using election_test::event_log;
using redcoord::testing::local_server;
using clk = std::chrono::steady_clock;

namespace {
election_options opts(std::string id, std::chrono::milliseconds term) {
    election_options o;
    o.identity = std::move(id);
    o.term = term;
    return o;
}
}  // namespace

TEST(ElectionSharedRuntime, PausedServerOfOneElectionDoesNotCostAnotherItsLeadership) {
    local_server healthy, stalled;
    auto rt = redcoord::runtime::create();
    connection_pool pa(healthy.endpoint(), {}, rt), pb(stalled.endpoint(), {}, rt);
    const auto term = 600ms;
    leader_elector a(pa, "steady", opts("a", term)), b(pb, "stalled", opts("b", term));
    event_log la(a), lb(b);
    a.start();
    b.start();
    ASSERT_TRUE(la.wait_for('E', 1, 3s));
    ASSERT_TRUE(lb.wait_for('E', 1, 3s));
    stalled.pause();  // b's rounds now block on the shared timer thread until their bound
    const auto until = clk::now() + 3s;
    while (clk::now() < until) {
        ASSERT_TRUE(a.is_leader()) << "a lost its leadership while only b's server was paused";
        std::this_thread::sleep_for(5ms);
    }
    EXPECT_EQ(la.count('R'), 0u);
    EXPECT_FALSE(b.is_leader());
    ASSERT_TRUE(lb.wait_for('R', 1, 1s));
    stalled.resume();
    b.stop();
    a.stop();
}
