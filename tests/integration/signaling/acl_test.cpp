// The signaling part as a least-privilege ACL user (issue 18): a user created from exactly
// signaling_acl_needs() (its broadcast channels named by the caller) runs broadcast, pattern
// and slot delivery, unicast, barriers, double barriers and latches; a user missing one needed
// command or pattern gets permission_error naming it, never a wait until the timeout.

#include <redcoord/core/log.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/sentinel.hpp>
#include <redcoord/signaling/acl.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/double_barrier.hpp>
#include <redcoord/signaling/latch.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include "../acl_support.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::expect_refused;
using redcoord::testing::expect_refused_any;
using redcoord::testing::local_server;
using redcoord::testing::make_acl_user;
using redcoord::testing::without_command;

namespace {

const std::vector<std::string> user_channels{"orders*"};

// Every primitive once with `parties` members per barrier (1: no other thread needed). Names
// end in `tag`: a run cut short by a refusal leaves members whose leases would delay the next.
void signaling_scenarios(connection_pool& pool, const std::string& prefix, std::size_t parties,
                         const std::string& tag = "") {
    signal_options o;
    o.prefix = prefix;
    signal_hub hub(pool, {}, o);

    auto w = hub.listen({"orders"});
    auto pw = hub.listen_pattern({"orders*"});
    std::atomic<int> slot_calls{0};
    auto slot = hub.on("orders.slot", [&](const redcoord::signal&) { ++slot_calls; });
    EXPECT_GE(hub.broadcast("orders", "one"), 1u);
    (void)hub.broadcast("orders.slot", "two");
    auto got = w.wait(5s);
    if (!got) throw std::runtime_error("broadcast not received");
    EXPECT_EQ(got->payload, "one");
    if (!pw.wait(5s)) throw std::runtime_error("pattern wait got nothing");
    if (!eventually([&] { return slot_calls.load() == 1; }, 5s))
        throw std::runtime_error("slot not called");

    auto uw = hub.listen_unicast("jobs");
    if (!hub.unicast("jobs", "job-1")) throw std::runtime_error("no unicast waiter found");
    auto job = uw.wait(5s);
    if (!job || job->payload != "job-1") throw std::runtime_error("unicast not received");

    auto run_parties = [&](auto&& member) {
        std::vector<std::future<void>> others;
        for (std::size_t i = 1; i < parties; ++i)
            others.push_back(std::async(std::launch::async, member));
        member();
        for (auto& f : others) f.get();
    };
    run_parties([&] {
        barrier b(hub, "b" + tag, parties);
        (void)b.arrive_and_wait(10s);
        (void)b.arrived();  // ZCOUNT of the live members
    });
    run_parties([&] {
        double_barrier d(hub, "d" + tag, parties);
        d.enter(10s);
        d.leave(10s);
    });
    latch l(hub, "l" + tag, parties);
    run_parties([&] { (void)l.count_down(); });
    if (!l.wait(10s)) throw std::runtime_error("latch not open");
    EXPECT_EQ(l.count(), 0u);
}

}  // namespace

TEST(SignalingAcl, EverythingRunsAsUserWithExactlyTheSignalingRules) {
    local_server server;
    for (const std::string prefix : {std::string(default_prefix), std::string("app1:")}) {
        SCOPED_TRACE(prefix);
        connection_pool pool(make_acl_user(server, "signaling_" + std::to_string(prefix.size()),
                                           signaling_acl_needs(prefix, user_channels)));
        signaling_scenarios(pool, prefix, 3);
    }
}

TEST(SignalingAcl, ReplicaLinksRunAsTheUser) {
    local_server master;
    // Counted by the master (so its ROLE lists the replica for the first discovery).
    auto replica = local_server::acknowledging_replica_of(master);
    const auto needs = signaling_acl_needs(default_prefix, user_channels);
    connection_pool pool(make_acl_user(master, "signaling_replicated", needs));
    (void)make_acl_user(*replica, "signaling_replicated", needs);
    signal_hub hub(pool);
    auto w = hub.listen({"orders"});
    EXPECT_TRUE(
        eventually([&] { return hub.connected_links() == 2; }, 5s));  // master + replica (ROLE)
    (void)hub.broadcast("orders", "x");
    EXPECT_TRUE(w.wait(5s));
}

// Replica discovery of a plain master asks ROLE, which is @admin @dangerous. A user granted
// INFO but not ROLE gets the replicas from INFO replication instead.
TEST(SignalingAcl, ReplicaDiscoveryWithoutRoleReadsInfoReplication) {
    local_server master;
    auto replica = local_server::acknowledging_replica_of(master);
    auto needs = without_command(signaling_acl_needs(default_prefix, user_channels), "role");
    needs.allow_commands({"info"});
    const auto ep = make_acl_user(master, "signaling_info_not_role", needs);
    (void)make_acl_user(*replica, "signaling_info_not_role", needs);
    std::vector<endpoint> found;
    try {
        found = discover_replicas(ep);
    } catch (const std::exception& e) {
        ADD_FAILURE() << "discover_replicas threw: " << e.what();
    }
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].port, replica->port());
    EXPECT_EQ(found[0].user, "signaling_info_not_role");  // the master's credentials

    connection_pool pool(ep);
    signal_hub hub(pool);
    auto w = hub.listen({"orders"});
    EXPECT_TRUE(eventually([&] { return hub.connected_links() == 2; }, 5s))
        << hub.connected_links() << " links (master + replica expected)";
    (void)hub.broadcast("orders", "x");
    EXPECT_TRUE(w.wait(5s));
}

namespace {

struct captured_log final : log_sink {
    void write(const log_record& r) override {
        std::lock_guard l(mu);
        lines.push_back(std::string(to_string(r.level)) + " " + std::string(r.component) + ": " +
                        std::string(r.message) + format_fields(r.fields));
    }
    bool has(std::string_view what) {
        std::lock_guard l(mu);
        for (const auto& line : lines)
            if (line.find(what) != std::string::npos) return true;
        return false;
    }
    std::mutex mu;
    std::vector<std::string> lines;
};

}  // namespace

// A user without ROLE and INFO (any user with -@dangerous): discovery finds no replica and
// says so in the log; it is never an error for the caller, and the master link works.
TEST(SignalingAcl, ReplicaDiscoveryRefusedIsMasterOnlyWithALogRecord) {
    local_server master;
    auto replica = local_server::acknowledging_replica_of(master);
    const std::string user = "signaling_not_dangerous";
    for (const local_server* s : {&master, replica.get()}) {
        connection admin(s->endpoint());
        (void)admin.command({"ACL", "SETUSER", user, "on",
                             std::string(">") + std::string(redcoord::testing::acl_password),
                             "resetkeys", "resetchannels", "~*", "&*", "+@all", "-@dangerous"});
    }
    endpoint ep = master.endpoint();
    ep.user = user;
    ep.password = std::string(redcoord::testing::acl_password);
    std::vector<endpoint> found{ep};
    try {
        found = discover_replicas(ep);
    } catch (const std::exception& e) {
        ADD_FAILURE() << "discover_replicas threw: " << e.what();
    }
    EXPECT_TRUE(found.empty());

    auto rt = runtime::create();
    auto log = std::make_shared<captured_log>();
    rt->set_log_sink(log);
    connection_pool pool(ep, {}, rt);
    signal_hub hub(pool);
    auto w = hub.listen({"orders"});
    (void)hub.broadcast("orders", "x");
    EXPECT_TRUE(w.wait(5s));
    EXPECT_TRUE(eventually([&] { return log->has("replica discovery"); }, 5s))
        << "no log record about the refused discovery";
    EXPECT_EQ(hub.connected_links(), 1u);
}

// Every needed command removed in turn (the whole list but the exceptions noted below).
TEST(SignalingAcl, MissingAnyNeededCommandIsPermissionErrorNamingIt) {
    local_server server;
    const auto needs = signaling_acl_needs(default_prefix, user_channels);
    int n = 0;
    for (const auto& cmd : needs.commands) {
        SCOPED_TRACE(cmd);
        connection_pool pool(make_acl_user(server, "signaling_no_" + std::to_string(n++),
                                           without_command(needs, cmd)));
        if (cmd == "role" || cmd == "unsubscribe" || cmd == "punsubscribe") {
            // Replica discovery and the last listener's goodbye: nothing waits on them.
            signaling_scenarios(pool, std::string(default_prefix), 1, cmd);
            continue;
        }
        if (cmd == "zscore") {
            // Only a member's lease check after its barrier moved on, or a double barrier's
            // heartbeat on the timer thread: not reached on demand.
            continue;
        }
        expect_refused(cmd, 2s,
                       [&] { signaling_scenarios(pool, std::string(default_prefix), 1, cmd); });
    }
}

TEST(SignalingAcl, MissingKeyOrChannelPatternIsPermissionError) {
    local_server server;
    // No broadcast channel granted: listening and publishing there are refused.
    connection_pool deaf(
        make_acl_user(server, "signaling_no_user_channels", signaling_acl_needs()));
    signal_hub hub(deaf);
    expect_refused("subscribe", 2s, [&] { (void)hub.wait("orders", 10s); });
    expect_refused("psubscribe", 2s, [&] { (void)hub.wait_pattern("orders*", 10s); });
    expect_refused("publish", 2s, [&] { (void)hub.broadcast("orders", "x"); });

    auto no_keys = signaling_acl_needs();
    no_keys.key_patterns.clear();
    connection_pool keyless(make_acl_user(server, "signaling_no_keys", no_keys));
    signal_hub khub(keyless);
    barrier b(khub, "b", 1);
    expect_refused_any({"eval", "evalsha"}, 2s, [&] { (void)b.arrive_and_wait(10s); });
}
