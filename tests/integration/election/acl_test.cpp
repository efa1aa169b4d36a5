// The election part as a least-privilege ACL user (issue 18): a user created from exactly
// election_acl_needs() runs master_selector, leader_elector (callbacks, resign and the
// handoff signal) and leader_task; a user missing one needed command or pattern gets
// permission_error naming it (from the call, or from leader_elector::last_error() for the
// rounds that run on the runtime's timer thread), never a wait for leadership.

#include <redcoord/election/acl.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/election/leader_task.hpp>
#include <redcoord/election/master_selector.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include "../acl_support.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::eventually;
using redcoord::testing::expect_refused;
using redcoord::testing::local_server;
using redcoord::testing::make_acl_user;
using redcoord::testing::without_command;

namespace {

election_options opts(std::string id, const std::string& prefix) {
    election_options o;
    o.identity = std::move(id);
    o.term = 900ms;
    o.prefix = prefix;
    return o;
}

void election_scenarios(connection_pool& pool, const std::string& prefix) {
    master_selector sel(pool, "sel", opts("s1", prefix));
    auto r = sel.campaign_once();
    EXPECT_TRUE(r.leader);
    EXPECT_GT(r.epoch, 0u);
    EXPECT_EQ(sel.leader(), std::optional<std::string>("s1"));
    EXPECT_TRUE(sel.resign());

    std::mutex mu;
    std::vector<std::string> events;
    auto note = [&](std::string e) {
        std::lock_guard l(mu);
        events.push_back(std::move(e));
    };
    leader_elector a(pool, "el", opts("a", prefix)), b(pool, "el", opts("b", prefix));
    std::vector<boost::signals2::scoped_connection> slots;
    for (auto* e : {&a, &b}) {
        const std::string id = e->identity();
        slots.push_back(e->on_elected([&, id](std::uint64_t) { note(id + " elected"); }));
        slots.push_back(e->on_revoked(
            [&, id](revoke_reason why) { note(id + " revoked " + std::string(to_string(why))); }));
    }
    std::atomic<int> ticks{0};
    leader_task task(a, 50ms, [&](std::uint64_t, std::stop_token) { ++ticks; });
    a.start();
    ASSERT_TRUE(eventually([&] { return a.is_leader(); }, 5s));
    b.start();
    ASSERT_TRUE(eventually([&] { return ticks.load() >= 2; }, 5s));
    EXPECT_EQ(a.leader(), std::optional<std::string>("a"));
    // The resign hands over at once through the handoff channel (PUBLISH in the script,
    // SUBSCRIBE on the follower's link), well before the term would end.
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(a.resign());
    ASSERT_TRUE(eventually([&] { return b.is_leader(); }, 5s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 900ms);
    EXPECT_FALSE(a.last_error());
    EXPECT_FALSE(b.last_error());
    b.stop();
    a.stop();
    std::lock_guard l(mu);
    EXPECT_NE(std::find(events.begin(), events.end(), "a elected"), events.end());
    EXPECT_NE(std::find(events.begin(), events.end(), "a revoked resigned"), events.end());
    EXPECT_NE(std::find(events.begin(), events.end(), "b elected"), events.end());
}

// The permission_error an elector reports within `bound`, named `cmd` (or either of
// `alternatives`, see expect_refused_any). A refused handoff subscription does not keep the
// elector from leading (rounds need no channel); anything else does.
void expect_elector_refused(std::initializer_list<std::string_view> alternatives, leader_elector& e,
                            std::chrono::milliseconds bound) {
    auto op = [&] {
        e.start();
        if (!eventually([&] { return e.last_error() != nullptr; }, bound)) return;
        std::rethrow_exception(e.last_error());
    };
    if (alternatives.size() == 1)
        expect_refused(*alternatives.begin(), bound, op);
    else
        redcoord::testing::expect_refused_any(alternatives, bound, op);
    if (*alternatives.begin() != "subscribe") EXPECT_FALSE(e.is_leader());
    e.stop();
}

}  // namespace

TEST(ElectionAcl, EverythingRunsAsUserWithExactlyTheElectionRules) {
    local_server server;
    for (const std::string prefix : {std::string(default_prefix), std::string("app1:")}) {
        SCOPED_TRACE(prefix);
        connection_pool pool(make_acl_user(server, "election_" + std::to_string(prefix.size()),
                                           election_acl_needs(prefix)));
        election_scenarios(pool, prefix);
    }
}

TEST(ElectionAcl, ReplicatedElectionRunsAsTheUser) {
    local_server master;
    auto replica = local_server::acknowledging_replica_of(master);
    const auto ep = make_acl_user(master, "election_replicated", election_acl_needs());
    (void)make_acl_user(*replica, "election_replicated", election_acl_needs());
    connection_pool pool(ep);
    auto o = opts("r", std::string(default_prefix));
    o.term = 3s;
    o.replication.replicas = 1;
    o.replication.timeout = 500ms;
    leader_elector e(pool, "rep", o);
    e.start();
    EXPECT_TRUE(eventually([&] { return e.is_leader(); }, 5s));
    EXPECT_FALSE(e.last_error());
}

// Every needed command removed in turn (the whole list).
TEST(ElectionAcl, MissingAnyNeededCommandIsPermissionErrorNamingIt) {
    local_server server;
    const auto needs = election_acl_needs();
    int n = 0;
    for (const auto& cmd : needs.commands) {
        SCOPED_TRACE(cmd);
        connection_pool pool(make_acl_user(server, "election_no_" + std::to_string(n++),
                                           without_command(needs, cmd)));
        const std::string name = "miss-" + cmd;
        if (cmd == "role" || cmd == "unsubscribe") {
            // Replica discovery and the last listener's goodbye: nothing depends on them here.
            leader_elector e(pool, name, opts("x", std::string(default_prefix)));
            e.start();
            EXPECT_TRUE(eventually([&] { return e.is_leader(); }, 5s));
            continue;
        }
        if (cmd == "hmget" || cmd == "pttl") continue;  // `redcoord leader`: tests/integration/cli
        if (cmd == "hget") {
            master_selector sel(pool, name, opts("x", std::string(default_prefix)));
            expect_refused(cmd, 2s, [&] { (void)sel.leader(); });
            continue;
        }
        if (cmd == "wait") {
            master_selector sel(pool, name, [] {
                auto o = opts("x", std::string(default_prefix));
                o.term = 5s;
                o.replication.replicas = 1;
                o.replication.timeout = 1s;
                return o;
            }());
            expect_refused(cmd, 2s, [&] { (void)sel.campaign_once(); });
            continue;
        }
        if (cmd == "ping" || cmd == "eval" || cmd == "subscribe") {
            // The elector's rounds (the pool's handshake, the first EVAL) and its handoff
            // subscription run on the runtime's threads: last_error() reports them.
            leader_elector e(pool, name, opts("x", std::string(default_prefix)));
            expect_elector_refused({cmd}, e, 2s);
            continue;
        }
        // The rest is needed by a round on a connection that has run the script (EVALSHA), by
        // the scripts' own commands, or by resign() (PUBLISH, DEL).
        master_selector sel(pool, name, opts("x", std::string(default_prefix)));
        expect_refused(cmd, 2s, [&] {
            for (int round = 0; round < 2; ++round) {
                (void)sel.campaign_once();
                if (!sel.resign()) throw std::runtime_error("not resigned");
            }
        });
    }
}

TEST(ElectionAcl, MissingKeyOrChannelPatternIsPermissionError) {
    local_server server;
    auto no_keys = election_acl_needs();
    no_keys.key_patterns.clear();
    connection_pool keyless(make_acl_user(server, "election_no_keys", no_keys));
    leader_elector e(keyless, "k", opts("k", std::string(default_prefix)));
    expect_elector_refused({"eval", "evalsha"}, e, 2s);

    auto no_channels = election_acl_needs();
    no_channels.channel_patterns.clear();
    connection_pool deaf(make_acl_user(server, "election_no_channels", no_channels));
    leader_elector d(deaf, "c", opts("c", std::string(default_prefix)));
    expect_elector_refused({"subscribe"}, d, 2s);
}
