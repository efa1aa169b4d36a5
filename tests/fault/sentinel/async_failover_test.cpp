// The event loop's link on a Sentinel endpoint (issue 35, item 1), against real sentinels and
// real failovers: it reaches the master the sentinels name (asked on a tick worker, its role
// checked in the handshake), follows a manual failover and a killed master to the promoted
// replica, and reports an unknown service as the resolver's typed error; the async lock and
// pop run on it, woken by their notices.

#include "async_wake_checks.hpp"

#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/sentinel.hpp>
#include <redcoord/testing/local_sentinel.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::detail::async_link;
using redcoord::detail::link_outcome;
using redcoord::testing::local_sentinel;
using clock_type = std::chrono::steady_clock;

namespace {

// Sentinel promotes within down_after + election + promotion: generous slack on 2 cores.
constexpr auto failover_bound = 30s;

link_outcome run(async_link& link, std::vector<std::string> argv) {
    std::promise<link_outcome> p;
    link.exec(std::move(argv), clock_type::now() + 10s,
              [&](link_outcome o) { p.set_value(std::move(o)); });
    return p.get_future().get();
}

bool answered_ok(const link_outcome& o) {
    return o.result.answered() && !o.result.value->is_error();
}

}  // namespace

TEST(AsyncSentinel, TheLinkWritesToTheMasterTheSentinelsName) {
    local_sentinel svc;
    auto rt = runtime::create();
    auto link = rt->link(svc.endpoint());
    const auto o = run(*link, {"SET", "k", "v"});
    ASSERT_TRUE(answered_ok(o)) << o.result.error;
    EXPECT_EQ(svc.master().command({"GET", "k"}).text(), "v");
    EXPECT_EQ(rt->link(svc.endpoint()), link);
}

TEST(AsyncSentinel, AfterAManualFailoverTheLinkWritesToTheNewMaster) {
    local_sentinel svc;
    auto rt = runtime::create();
    auto link = rt->link(svc.endpoint());
    ASSERT_TRUE(answered_ok(run(*link, {"SET", "before", "1"})));
    const auto old = svc.failover();
    const auto now_master = svc.wait_switched(old, failover_bound);
    ASSERT_NE(now_master, old);
    // The old master turned replica answers READONLY at most once: the link reports it and
    // the next command asks the sentinels again.
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] {
            return answered_ok(run(*link, {"SET", "after", "1"}));
        },
        failover_bound));
    EXPECT_EQ(svc.server(now_master)->command({"GET", "after"}).text(), "1");
}

TEST(AsyncSentinel, AKilledMasterFailsWhatWasInFlightAndTheLinkMovesToThePromotedReplica) {
    local_sentinel svc;
    auto rt = runtime::create();
    auto link = rt->link(svc.endpoint());
    ASSERT_TRUE(answered_ok(run(*link, {"SET", "before", "1"})));
    const auto old = svc.kill_master();
    EXPECT_FALSE(run(*link, {"PING"}).result.answered());
    const auto promoted = svc.wait_promoted(old, failover_bound);
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] {
            return answered_ok(run(*link, {"SET", "after", "1"}));
        },
        failover_bound));
    EXPECT_EQ(svc.server(promoted)->command({"GET", "after"}).text(), "1");
}

TEST(AsyncSentinel, AnUnknownServiceIsTheResolversTypedErrorAndNothingIsSent) {
    local_sentinel svc;
    auto e = svc.endpoint();
    e.service = "no-such-service";
    auto rt = runtime::create();
    const auto o = run(*rt->link(e), {"SET", "k", "v"});
    EXPECT_FALSE(o.sent);
    ASSERT_TRUE(o.failure);
    EXPECT_THROW(std::rethrow_exception(o.failure), unknown_service);
}

TEST(AsyncSentinel, AnAsyncLockWaiterIsWokenByTheReleaseAndAPopByAPush) {
    local_sentinel svc;
    auto rt = runtime::create();
    connection_pool pool(svc.endpoint(), {}, rt);
    async_wake_checks::lock_waiter_woken_by_release(pool, "s", [&](const std::string& key) {
        return svc.master().command({"GET", key}).text();
    });
    async_wake_checks::pop_woken_by_push(pool, "s", "behind a sentinel");
}
