// Real faults against the reliable queue: consumer processes SIGKILLed at random points and
// restarted, and a Redis server killed and restarted with AOF (appendfsync always).

#include <redcoord/core/errors.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

using namespace redcoord;
using namespace std::chrono_literals;
using redcoord::testing::local_server;
using redcoord::testing::process;

namespace {

constexpr int jobs = 20000;
constexpr int consumers = 4;
constexpr int threads_per_consumer = 2;
constexpr int visibility_ms = 4000;  // generous: a loaded 2-core box must not lapse live leases
constexpr int work_us = 6000;        // per job, so 20,000 jobs take ~15 s and kills hit mid-run
constexpr int max_kills = 40;

struct slot {
    std::string id;
    std::unique_ptr<process> proc;
};

void spawn(slot& s, const local_server& srv, int index, int generation) {
    s.id = "s" + std::to_string(index) + "g" + std::to_string(generation);
    redcoord::testing::process_options po;
    po.output_file = (srv.dir() / ("consumer-" + s.id + ".log")).string();
    s.proc = std::make_unique<process>(
        std::vector<std::string>{CHILD_PATH, srv.url(), "jobs", s.id,
                                 std::to_string(threads_per_consumer),
                                 std::to_string(visibility_ms), std::to_string(work_us)},
        po);
}

}  // namespace

TEST(QueueFault, SigkilledConsumersLoseNothing) {
    local_server srv;
    connection_pool pool(srv.endpoint());
    reliable_queue producer(pool, "jobs");
    for (int base = 0; base < jobs; base += 1000) {
        std::vector<std::string> batch;
        for (int i = base; i < base + 1000; ++i) batch.push_back("job" + std::to_string(i));
        producer.push_batch(batch);
    }

    std::vector<slot> slots(consumers);
    std::vector<int> generation(consumers, 0);
    for (int i = 0; i < consumers; ++i) spawn(slots[static_cast<std::size_t>(i)], srv, i, 0);

    std::set<std::string> killed;
    const auto deadline = std::chrono::steady_clock::now() + 100s;
    auto done = [&] { return srv.command({"HLEN", "done"}).integer(); };
    // Kill a random consumer every 100-500 ms while work remains, then let it finish.
    while (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(random_between(100, 500)));
        auto n = done();
        auto st = producer.stats();
        std::size_t in_flight = 0;
        for (auto& [c, k] : st.in_flight) in_flight += k;
        if (n == jobs && st.ready == 0 && in_flight == 0 && st.dead == 0) break;
        if (static_cast<int>(killed.size()) < max_kills && n < jobs * 9 / 10) {
            auto i = static_cast<std::size_t>(random_between(0, consumers - 1));
            slots[i].proc->kill();  // SIGKILL wherever it is: popping, handling, acking
            killed.insert(slots[i].id);
            spawn(slots[i], srv, static_cast<int>(i), ++generation[i]);
        }
    }
    for (auto& s : slots) s.proc->signal(SIGTERM);
    for (auto& s : slots) {
        auto rc = s.proc->wait_for(10s);
        EXPECT_EQ(rc, 0) << s.id << " (3: a live consumer lost its lease or retried a job)";
        if (rc != 0) {
            std::ifstream f(srv.dir() / ("consumer-" + s.id + ".log"));
            std::cout << f.rdbuf();
        }
    }

    auto st = producer.stats();
    EXPECT_EQ(st.ready, 0u);
    EXPECT_EQ(st.dead, 0u);
    for (auto& [c, k] : st.in_flight) EXPECT_EQ(k, 0u) << c;
    ASSERT_EQ(done(), jobs) << "jobs lost";

    // Who processed what, in processing order. Every processing of a job but its last was not
    // acked, so it must have been in flight at a consumer that was then SIGKILLed; each
    // killed consumer held at most threads_per_consumer messages at its death.
    std::map<std::string, std::vector<std::string>> by_job, detail_by_job;
    const auto log = srv.command({"LRANGE", "log", "0", "-1"});
    for (auto& e : log.elements()) {
        auto& t = e.text();
        auto bar = t.find('|');
        auto bar2 = t.find('|', bar + 1);
        by_job[t.substr(0, bar)].push_back(t.substr(bar + 1, bar2 - bar - 1));
        detail_by_job[t.substr(0, bar)].push_back(t.substr(bar + 1));
    }
    ASSERT_EQ(by_job.size(), static_cast<std::size_t>(jobs));
    std::map<std::string, int> dup_by_consumer;
    int duplicates = 0;
    for (auto& [job, who] : by_job) {
        for (std::size_t k = 0; k + 1 < who.size(); ++k) {
            ++duplicates;
            EXPECT_TRUE(killed.count(who[k]))
                << job << " was redelivered although " << who[k] << " (never killed) processed it";
            ++dup_by_consumer[who[k]];
            if (dup_by_consumer[who[k]] > threads_per_consumer) {
                for (auto& x : detail_by_job[job])
                    std::printf("[ detail   ] %s: %s\n", job.c_str(), x.c_str());
            }
        }
    }
    for (auto& [c, n] : dup_by_consumer)
        EXPECT_LE(n, threads_per_consumer) << c << " cannot have had that many messages in flight";
    std::printf(
        "[ report   ] %d jobs, %zu consumers SIGKILLed, %d duplicate deliveries "
        "(all from killed consumers' in-flight messages, by %zu of them), 0 lost\n",
        jobs, killed.size(), duplicates, dup_by_consumer.size());
    EXPECT_GE(killed.size(), 10u) << "the test did not exercise enough kills";
}

TEST(QueueFault, AcknowledgedPushesSurviveAServerCrashWithAofAlways) {
    local_server srv(
        redcoord::testing::server_options{.appendonly = true, .appendfsync = "always"});
    auto ep = srv.endpoint();
    ep.command_timeout = 1000ms;
    connection_pool pool(ep);
    std::mutex mu;
    std::set<std::string> pushed, acked;  // confirmed by the server's reply
    std::set<std::string> ack_unknown;    // ack sent, reply lost in the crash: done or not
    std::atomic<bool> stop{false};
    std::atomic<int> push_errors{0};

    std::thread pusher([&] {
        reliable_queue q(pool, "durable");
        for (int i = 0; !stop; ++i) {
            try {
                auto id = q.push("payload" + std::to_string(i));
                std::lock_guard lk(mu);
                pushed.insert(id);
            } catch (const error&) {
                ++push_errors;  // outcome unknown: may or may not be stored
                std::this_thread::sleep_for(20ms);
            }
        }
    });
    std::thread consumer([&] {
        reliable_queue q(pool, "durable", {.consumer_id = "consumer"});
        while (!stop) {
            std::optional<delivery> d;
            try {
                d = q.pop(50ms);
                if (d && q.ack(*d)) {
                    std::lock_guard lk(mu);
                    acked.insert(d->id);
                }
            } catch (const error&) {
                if (d) {
                    std::lock_guard lk(mu);
                    ack_unknown.insert(d->id);
                }
                std::this_thread::sleep_for(20ms);
            }
        }
        try {
            q.close();
        } catch (const error&) {}
    });

    std::this_thread::sleep_for(700ms);
    srv.kill();  // SIGKILL: only what was fsynced survives
    std::this_thread::sleep_for(300ms);
    srv.restart();
    std::this_thread::sleep_for(700ms);
    stop = true;
    pusher.join();
    consumer.join();
    EXPECT_GE(push_errors.load(), 1) << "the crash did not hit the pushes";
    ASSERT_GT(pushed.size(), 100u);

    // Drain what is left (recovering any processing list) and account for every push.
    reliable_queue drain(pool, "durable", {.consumer_id = "drain"});
    (void)drain.recover();
    std::set<std::string> remaining;
    while (auto d = drain.pop(100ms)) {
        remaining.insert(d->id);
        EXPECT_TRUE(drain.ack(*d));
    }
    // Messages still in processing lists of a consumer whose lease has not expired yet.
    auto st = drain.stats();
    for (auto& [c, n] : st.in_flight) EXPECT_EQ(n, 0u) << c;
    // A message whose ack reply was lost may be gone (the ack went through) or drained; only
    // the one ack in flight at the crash can be in that state.
    int lost = 0, resurrected = 0, acked_unconfirmed = 0;
    for (auto& id : pushed) {
        if (acked.count(id) || remaining.count(id)) continue;
        if (ack_unknown.count(id))
            ++acked_unconfirmed;
        else
            ++lost;
    }
    EXPECT_LE(acked_unconfirmed, 1);
    for (auto& id : acked)
        if (remaining.count(id)) ++resurrected;
    std::printf(
        "[ report   ] %zu pushes confirmed, %d failed during the crash, %zu acked, %zu drained "
        "after "
        "restart, %d acked without a reply, %d lost, %d acked messages reappeared\n",
        pushed.size(), push_errors.load(), acked.size(), remaining.size(), acked_unconfirmed, lost,
        resurrected);
    EXPECT_EQ(lost, 0);
    EXPECT_EQ(resurrected, 0);
}
