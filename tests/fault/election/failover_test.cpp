// Two-leader cases of the plain seed algorithm, and the hardened master_selector in the same
// situations: a leader paused past its term, and a Redis failover to a replica that missed the
// selector (missing) or its latest renewals (behind).

#include "seed_selector.hpp"

#include <redcoord/election/master_selector.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using election_test::seed_selector;
using redcoord::testing::local_server;
using clk = std::chrono::steady_clock;

namespace {
election_options hardened(std::string id, std::chrono::milliseconds term,
                          std::size_t replicas = 0) {
    election_options o;
    o.identity = std::move(id);
    o.term = term;
    o.replication.replicas = replicas;
    o.replication.timeout = 400ms;  // generous: a loaded machine may ack slowly
    return o;
}
}  // namespace

TEST(ElectionSeedVsHardened, LeaderPausedPastItsTermComesBackAsSecondLeaderOnlyInTheSeed) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    {
        seed_selector a(pool, "seed_pause", 300ms), b(pool, "seed_pause", 300ms);
        ASSERT_TRUE(a.master());
        std::this_thread::sleep_for(450ms);  // a "pauses" past its term; the selector expires
        for (int i = 0; i < 4; ++i) ASSERT_TRUE(b.master());
        // a wakes up: its remembered selector (1) is below the counter, so it "continues".
        const bool a_leads = a.master();
        const bool b_leads = b.master();
        EXPECT_TRUE(a_leads && b_leads)
            << "the literal master_selector algorithm is expected to elect two leaders here";
    }
    {
        master_selector a(pool, "hard_pause", hardened("a", 300ms)),
            b(pool, "hard_pause", hardened("b", 300ms));
        ASSERT_TRUE(a.campaign_once().leader);
        std::this_thread::sleep_for(450ms);
        for (int i = 0; i < 4; ++i) ASSERT_TRUE(b.campaign_once().leader);
        const auto ra = a.campaign_once();
        const auto rb = b.campaign_once();
        EXPECT_FALSE(ra.leader);
        EXPECT_EQ(ra.holder, std::optional<std::string>("b"));
        EXPECT_TRUE(rb.leader);
    }
}

TEST(ElectionSeedVsHardened, FailoverToAReplicaMissingTheSelectorElectsTwoSeedLeaders) {
    local_server master;
    auto replica = local_server::replica_of(master);
    connection_pool on_master(master.endpoint());
    seed_selector a(on_master, "seed_failover", 2000ms);
    // A partition: the replica stops following (and is promoted) before a's round, so the
    // replicated state misses the selector. (SIGSTOP would not do: the kernel still buffers the
    // replication stream and the replica applies it on SIGCONT.)
    replica->promote();
    ASSERT_TRUE(a.master());
    const auto a_confirmed = clk::now();
    master.kill();
    connection_pool on_replica(replica->endpoint());
    seed_selector b(on_replica, "seed_failover", 2000ms);
    ASSERT_TRUE(b.master());
    // a's last round made it leader for a term and nothing has told it otherwise: two leaders.
    EXPECT_LT(clk::now() - a_confirmed, 2000ms);
    // Even when a reaches the promoted replica, its remembered selector (1) <= the counter (2).
    a.use(on_replica);
    EXPECT_TRUE(a.master());
    EXPECT_TRUE(b.master());
}

TEST(ElectionSeedVsHardened, FailoverToAReplicaMissingTheSelectorKeepsOneHardenedLeader) {
    local_server master;
    auto replica = local_server::replica_of(master);
    connection_pool on_master(master.endpoint());
    master_selector a(on_master, "missing", hardened("a", 1000ms, 1));
    replica->promote();  // partitioned away and promoted before a's rounds (see above)
    // The master records a as holder, but no replica acknowledges: never confirmed, never leader.
    for (int i = 0; i < 3; ++i) {
        auto r = a.campaign_once();
        EXPECT_TRUE(r.holder_is_us);
        EXPECT_EQ(r.acks, 0);
        EXPECT_FALSE(r.leader);
    }
    master.kill();
    auto replica2 = local_server::replica_of(*replica);  // the new topology's replica
    connection_pool on_replica(replica->endpoint());
    master_selector b(on_replica, "missing", hardened("b", 1000ms, 1));
    auto rb = b.campaign_once();
    for (int i = 0; i < 5 && !rb.leader; ++i)
        rb = b.campaign_once();  // the new replica's first ack may lag
    EXPECT_TRUE(rb.leader);
    master_selector a2(on_replica, "missing", hardened("a", 1000ms, 1));
    EXPECT_FALSE(a2.campaign_once().leader);
}

TEST(ElectionSeedVsHardened, FailoverToAReplicaBehindWaitsOutTheOldLeadersDeadline) {
    local_server master;
    auto replica = local_server::replica_of(master);
    connection_pool on_master(master.endpoint());
    const auto term = 2000ms;
    master_selector a(on_master, "behind", hardened("a", term, 1));
    auto first = a.campaign_once();
    for (int i = 0; i < 5 && !first.leader; ++i)
        first = a.campaign_once();  // the first ack may lag
    ASSERT_TRUE(first.leader);
    ASSERT_EQ(first.acks, 1);
    auto a_deadline = first.deadline;
    // Replication stops; a keeps renewing on the master but its rounds are no longer confirmed,
    // so its deadline stays where the replica's copy of the expiry is.
    std::this_thread::sleep_for(200ms);
    replica->promote();  // partitioned away and promoted: it keeps a's last confirmed expiry
    for (int i = 0; i < 1; ++i) {
        auto r = a.campaign_once();
        EXPECT_TRUE(r.holder_is_us);
        EXPECT_FALSE(r.leader);
        if (r.leader) a_deadline = r.deadline;
    }
    master.kill();
    auto replica2 = local_server::replica_of(*replica);
    connection_pool on_replica(replica->endpoint());
    master_selector b(on_replica, "behind", hardened("b", term, 1));
    std::optional<clk::time_point> b_leader_at;
    bool saw_a = false;
    const auto until = clk::now() + 5s;
    while (!b_leader_at && clk::now() < until) {
        auto r = b.campaign_once();
        if (r.leader)
            b_leader_at = r.sent_at;
        else {
            saw_a = saw_a || r.holder == std::optional<std::string>("a");
            std::this_thread::sleep_for(20ms);
        }
    }
    ASSERT_TRUE(b_leader_at);
    EXPECT_TRUE(saw_a) << "the promoted replica should still have held a's selector";
    EXPECT_GE(*b_leader_at, a_deadline) << "b led while a's local deadline still ran";
    EXPECT_GT(b.max_epoch_seen(), first.epoch);
}

// With replicas > 0 the WAIT reply may take replica_timeout; reading it under command_timeout
// alone fails the round (and steps the leader down) merely because replica_timeout >=
// command_timeout. A paused replica makes WAIT use all of its timeout.
TEST(ElectionReplicas, M7_WaitReplyIsReadWithReplicaTimeoutPlusCommandTimeout) {
    redcoord::testing::master_and_replica m;
    auto ep = m.master.endpoint();
    ep.command_timeout = 200ms;
    connection_pool pool(ep);
    auto o = hardened("a", 2000ms, 1);
    o.replication.timeout = 400ms;  // >= command_timeout: allowed, and well inside the term
    master_selector a(pool, "m7", o);
    ASSERT_TRUE(a.campaign_once().leader);
    m.replica->pause();
    std::optional<campaign_result> r;
    EXPECT_NO_THROW(r = a.campaign_once());
    m.replica->resume();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->acks, 0);
    EXPECT_TRUE(r->holder_is_us);
    EXPECT_FALSE(r->leader);  // not acknowledged: not a confirmed renewal
}

// WAIT counts any replica, so `replicas` below the replicas a failover could promote leaves the
// failover race open: the grant is on one replica, the other is promoted without it, and a
// second candidate leads there while the first is inside its term (options.hpp: "ask for as
// many replicas as Sentinel could promote"). With every replica asked for, the grant that
// only one of them holds never counted.
TEST(ElectionReplicas, WaitForFewerReplicasThanCouldBePromotedLetsTwoLeadersIn) {
    for (std::size_t replicas : {1U, 2U}) {
        SCOPED_TRACE("replicas = " + std::to_string(replicas));
        local_server master;
        auto behind = local_server::replica_of(master);
        auto holding = local_server::replica_of(master);
        connection_pool on_master(master.endpoint());
        const auto term = 3000ms;
        master_selector a(on_master, "promotable", hardened("a", term, replicas));
        // `behind` is cut off and promoted before a's rounds (see above: SIGSTOP would not do),
        // `holding` acknowledges them.
        behind->promote();
        auto ra = a.campaign_once();
        for (int i = 0; i < 5 && !ra.leader && ra.acks < 1; ++i)
            ra = a.campaign_once();  // holding's first ack may lag
        EXPECT_TRUE(ra.holder_is_us);
        EXPECT_EQ(ra.acks, 1);
        EXPECT_EQ(ra.leader, replicas == 1);
        master.kill();
        // The failover picks `behind` (Sentinel may: it does not know which replica acked).
        auto follower = local_server::replica_of(*behind);
        connection_pool on_promoted(behind->endpoint());
        master_selector b(on_promoted, "promotable", hardened("b", term, 1));
        auto rb = b.campaign_once();
        for (int i = 0; i < 5 && !rb.leader; ++i) rb = b.campaign_once();
        ASSERT_TRUE(rb.leader);
        const bool a_still_inside = ra.leader && clk::now() < ra.deadline;
        if (replicas == 1)
            EXPECT_TRUE(a_still_inside) << "two leaders were expected: WAIT 1 met by the "
                                           "replica that was not promoted";
        else
            EXPECT_FALSE(a_still_inside) << "two leaders although every replica was asked for";
    }
}
