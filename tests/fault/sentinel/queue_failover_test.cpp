// reliable_queue across a real Sentinel failover: pushes and acks continue, acknowledged
// pushes can be lost to asynchronous replication, and WAIT-backed pushes are not.
#include "failover_faults.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/replication.hpp>
#include <redcoord/core/sentinel.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_sentinel.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_sentinel;
using redcoord::testing::local_sentinel_options;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto failover_bound = 20s;

template <class F>
bool eventually(std::chrono::milliseconds within, F f) {
    auto deadline = clock_type::now() + within;
    while (clock_type::now() < deadline) {
        try {
            if (f()) return true;
        } catch (const error&) {}
        std::this_thread::sleep_for(10ms);
    }
    return false;
}

// The service's configuration epoch as the first sentinel that answers reports it: every
// failover raises it. A second failover (the promoted master missing its down-after window on a
// loaded machine) can promote a replica that never saw a pop's LMOVE; an ack then finds nothing
// to remove and the message is delivered again, which is the queue's at-least-once contract.
long long config_epoch(const local_sentinel& svc) {
    for (std::size_t i = 0; i < svc.sentinel_count(); ++i) {
        try {
            const auto fields =
                svc.sentinel_command(i, {"SENTINEL", "MASTER", svc.options().service}).elements();
            for (std::size_t k = 0; k + 1 < fields.size(); k += 2)
                if (fields[k].text() == "config-epoch") return std::stoll(fields[k + 1].text());
        } catch (const error&) {}
    }
    throw error("no sentinel reported the service's config-epoch");
}

// Pops and acks everything, once every sentinel names the master that replaced `old`; every
// ack must find its message unless Sentinel failed over again meanwhile.
std::set<std::string> drain(local_sentinel& svc, const host_port& old, connection_pool& pool,
                            const std::string& name) {
    (void)svc.wait_switched(old, failover_bound);
    const auto epoch = config_epoch(svc);
    reliable_queue consumer(pool, name, {.recover_on_start = false});
    std::set<std::string> got;
    int acks_without_message = 0;
    for (;;) {
        auto d = consumer.pop(200ms);
        if (!d) break;
        if (!consumer.ack(*d)) ++acks_without_message;
        got.insert(d->payload);
    }
    consumer.close();
    if (acks_without_message > 0)
        EXPECT_GT(config_epoch(svc), epoch)
            << acks_without_message << " acks on " << name
            << " found their message gone although Sentinel did not fail over again";
    return got;
}

// Pushes confirmed by one replica (reliable_queue_options::replication).
reliable_queue_options waited(std::chrono::milliseconds replica_timeout = 100ms) {
    reliable_queue_options o;
    o.replication.replicas = 1;
    o.replication.timeout = replica_timeout;
    return o;
}

local_sentinel_options two_replicas() {
    local_sentinel_options o;
    o.replicas = 2;  // the promoted master keeps a replica to WAIT for
    return o;
}

}  // namespace

TEST(QueueFailover, AcknowledgedButUnreplicatedPushIsLostWaitBackedPushIsNotConfirmed) {
    local_sentinel svc(two_replicas());
    connection_pool pool(svc.endpoint());
    reliable_queue q(pool, "jobs");
    // The option under test: a push returns only once one replica acknowledged it.
    reliable_queue qw(pool, "jobs", waited());
    ASSERT_NO_THROW(qw.push("durable"));

    host_port old_master;
    {
        sentinel_test::replication_cut cut(svc);
        // The master acknowledges this push although no replica will ever see it.
        q.push("async");
        // The WAIT-backed push: no replica acknowledges, so the caller is told the message
        // is not durable (and would push it again).
        try {
            qw.push("waited");
            ADD_FAILURE() << "a push no replica acknowledged must throw replication_timeout";
        } catch (const replication_timeout& e) {
            EXPECT_EQ(e.acknowledged(), 0u);
            EXPECT_EQ(e.required(), 1u);
        }
        old_master = cut.kill_master_and_resume();
    }
    ASSERT_TRUE(eventually(failover_bound, [&] {
        qw.push("after");  // replication_timeout / connection errors: try again
        return true;
    }));
    auto got = drain(svc, old_master, pool, "jobs");
    EXPECT_TRUE(got.count("durable"));
    EXPECT_TRUE(got.count("after"));
    EXPECT_FALSE(got.count("async"))
        << "the acknowledged, unreplicated push should be lost with the old master";
    EXPECT_FALSE(got.count("waited"));  // never confirmed: losing it breaks no promise
}

TEST(QueueFailover, PushesAndAcksContinueAndOnlyUnconfirmedPushesAreLost) {
    local_sentinel svc(two_replicas());
    connection_pool pool(svc.endpoint(), {.max_size = 8});
    std::atomic<bool> stop{false}, killed{false};
    std::mutex mu;
    std::vector<std::string> async_acked, waited_confirmed;
    std::atomic<int> async_after{0}, waited_after{0}, async_unknown{0}, waited_unconfirmed{0};

    // Two producers under the same failover: plain pushes (acknowledged by the master only)
    // and WAIT-backed pushes (confirmed once one replica acknowledged them).
    std::thread async_pusher([&] {
        reliable_queue q(pool, "async");
        for (int i = 0; !stop; ++i) {
            std::string p = "a" + std::to_string(i);
            try {
                q.push(p);
                std::lock_guard lk(mu);
                async_acked.push_back(p);
                if (killed) ++async_after;
            } catch (const error&) {
                ++async_unknown;  // outcome unknown: not counted as acknowledged
                std::this_thread::sleep_for(5ms);
            }
        }
    });
    std::thread waited_pusher([&] {
        reliable_queue q(pool, "waited", waited(200ms));
        for (int i = 0; !stop; ++i) {
            std::string p = "w" + std::to_string(i);
            try {
                q.push(p);  // returns only once one replica acknowledged
                std::lock_guard lk(mu);
                waited_confirmed.push_back(p);
                if (killed) ++waited_after;
            } catch (const replication_timeout&) {
                ++waited_unconfirmed;
            } catch (const error&) {
                ++waited_unconfirmed;
                std::this_thread::sleep_for(5ms);
            }
        }
    });
    std::this_thread::sleep_for(300ms);
    auto old = svc.kill_master();
    killed = true;
    (void)svc.wait_promoted(old, failover_bound);
    bool continued =
        eventually(failover_bound, [&] { return async_after > 50 && waited_after > 50; });
    stop = true;
    async_pusher.join();
    waited_pusher.join();
    EXPECT_TRUE(continued) << "async pushes after failover: " << async_after
                           << ", WAIT-backed: " << waited_after;

    auto got_async = drain(svc, old, pool, "async");
    auto got_waited = drain(svc, old, pool, "waited");
    std::size_t async_lost = 0, waited_lost = 0;
    for (auto& p : async_acked) async_lost += got_async.count(p) ? 0 : 1;
    for (auto& p : waited_confirmed) waited_lost += got_waited.count(p) ? 0 : 1;
    EXPECT_EQ(waited_lost, 0u) << "a WAIT-confirmed push was lost";
    std::cout << "[sentinel/queue] async pushes acknowledged " << async_acked.size() << ", lost "
              << async_lost << ", outcome unknown " << async_unknown << "; WAIT-backed confirmed "
              << waited_confirmed.size() << ", lost " << waited_lost << ", unconfirmed "
              << waited_unconfirmed << "\n";
    RecordProperty("async_acknowledged", static_cast<int>(async_acked.size()));
    RecordProperty("async_lost", static_cast<int>(async_lost));
    RecordProperty("waited_confirmed", static_cast<int>(waited_confirmed.size()));
    RecordProperty("waited_lost", static_cast<int>(waited_lost));
}
