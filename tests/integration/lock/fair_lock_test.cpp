// fair_lock against a real redis-server: semantics, FIFO order across processes, timed-out
// waiters leaving, fencing, extension, watchdog, bad input.

#include <redcoord/core/holder_label.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/fair_lock.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/process.hpp>

#include <gtest/gtest.h>

#include <signal.h>

#include <future>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord;
using redcoord::testing::local_server;
using clock_type = std::chrono::steady_clock;

namespace {

struct one_server {
    local_server server;
    connection_pool pool{server.endpoint()};
};

std::vector<std::string> queue_of(const local_server& s, const fair_lock& l) {
    std::vector<std::string> out;
    const auto r = s.command({"LRANGE", l.key() + ":queue", "0", "-1"});
    for (const auto& e : r.elements()) out.push_back(e.text());
    return out;
}

template <class Pred>
bool eventually(Pred p, std::chrono::milliseconds within = 5s) {
    const auto until = clock_type::now() + within;
    while (clock_type::now() < until) {
        if (p()) return true;
        std::this_thread::sleep_for(2ms);
    }
    return p();
}

}  // namespace

TEST(FairLock, AcquireSetsKeyAndReleaseDeletesIt) {
    one_server s;
    fair_lock a(s.pool, "res", {.timing = {.ttl = 10s}});
    auto got = a.acquire(0ms);
    ASSERT_TRUE(got);
    // 40 random hex digits, then the holder label (this process's <host>:<pid> by default).
    EXPECT_EQ(got->token.size(), 41u + default_holder_label().size());
    EXPECT_EQ(holder_label_of(got->token), default_holder_label());
    EXPECT_GT(got->remaining(), 9s);
    EXPECT_EQ(s.server.command({"GET", a.key()}).text(), got->token);
    EXPECT_EQ(a.key(),
              "redcoord:lock:{res}");  // the default lock's key: the two kinds exclude each other
    const auto pttl = s.server.command({"PTTL", a.key()}).integer();
    EXPECT_GT(pttl, 9000);
    EXPECT_LE(pttl, 10000);
    EXPECT_TRUE(a.held());
    EXPECT_FALSE(a.lost());

    fair_lock b(s.pool, "res", {.timing = {.ttl = 10s}});
    EXPECT_FALSE(b.try_lock());
    EXPECT_TRUE(queue_of(s.server, b).empty());  // try_lock never queues
    EXPECT_FALSE(b.acquire(100ms));
    EXPECT_TRUE(queue_of(s.server, b).empty());  // and a timed-out wait leaves
    EXPECT_EQ(s.server.command({"EXISTS", b.key() + ":waiter:" + b.waiter_id()}).integer(), 0);

    distributed_lock other_kind(s.pool, "res");
    EXPECT_FALSE(other_kind.try_lock());

    EXPECT_TRUE(a.release());
    EXPECT_FALSE(a.held());
    EXPECT_TRUE(s.server.command({"GET", a.key()}).is_nil());
    EXPECT_FALSE(a.release());
    EXPECT_TRUE(b.try_lock());
    b.unlock();
    EXPECT_TRUE(s.server.keys_without_ttl().empty());
}

TEST(FairLock, WaiterIsHandedTheLockOnReleaseWithoutPolling) {
    one_server s;
    fair_lock holder(s.pool, "wake", {.timing = {.ttl = 30s}});
    fair_lock waiter(s.pool, "wake", {.timing = {.ttl = 30s}, .waiter_lease = 3s});
    ASSERT_TRUE(holder.acquire(0ms));
    const auto before = s.server.command_calls("evalsha") + s.server.command_calls("eval");
    auto fut = std::async(std::launch::async, [&] { return waiter.acquire(20s); });
    ASSERT_TRUE(eventually([&] { return queue_of(s.server, waiter).size() == 1; }));
    std::this_thread::sleep_for(1200ms);
    ASSERT_EQ(fut.wait_for(0ms), std::future_status::timeout);
    const auto t0 = clock_type::now();
    EXPECT_TRUE(holder.release());
    auto got = fut.get();
    const auto took = clock_type::now() - t0;
    ASSERT_TRUE(got);
    EXPECT_LT(took, 500ms);  // handed over by the unicast, not found by a lease refresh (1 s)
    // Attempts: the first, the re-check after subscribing, the lease refreshes (every 1 s),
    // the winning one; not one every few milliseconds.
    const auto attempts =
        s.server.command_calls("evalsha") + s.server.command_calls("eval") - before;
    EXPECT_LE(attempts, 8) << "waiter polled";
    EXPECT_TRUE(queue_of(s.server, waiter).empty());
    waiter.unlock();
}

TEST(FairLock, FencingTokensStrictlyIncrease) {
    one_server s;
    fair_lock a(s.pool, "fenced"), b(s.pool, "fenced");
    std::uint64_t last = 0;
    for (int i = 0; i < 20; ++i) {
        auto& l = (i % 2) ? a : b;
        auto got = l.acquire(1s);
        ASSERT_TRUE(got);
        EXPECT_GT(got->fencing_token, last);
        EXPECT_EQ(l.fencing_token(), got->fencing_token);
        last = got->fencing_token;
        EXPECT_TRUE(l.release());
    }
    // The same counter as distributed_lock's.
    distributed_lock d(s.pool, "fenced");
    auto got = d.acquire(0ms);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->fencing_token, last + 1);
}

TEST(FairLock, TimedWaitsAndLockable) {
    one_server s;
    fair_lock a(s.pool, "timed", {.timing = {.ttl = 10s}}),
        b(s.pool, "timed", {.timing = {.ttl = 10s}});
    {
        std::unique_lock g(a);
        auto t0 = clock_type::now();
        EXPECT_FALSE(b.try_lock_for(150ms));
        const auto took = clock_type::now() - t0;
        EXPECT_GE(took, 150ms);
        EXPECT_LT(took, 1500ms);
        t0 = clock_type::now();
        EXPECT_FALSE(b.try_lock_until(std::chrono::system_clock::now() + 100ms));
        EXPECT_GE(clock_type::now() - t0, 90ms);
        EXPECT_THROW(a.lock(), invalid_argument);  // not recursive
    }
    EXPECT_TRUE(b.try_lock_for(1s));
    b.unlock();
    EXPECT_FALSE(b.held());
    EXPECT_THROW((void)b.fencing_token(), lock_lost);
    EXPECT_THROW(b.check_held(), lock_lost);
}

TEST(FairLock, ExtendMovesTheExpiryAndFailsOnceExpired) {
    one_server s;
    fair_lock a(s.pool, "ext", {.timing = {.ttl = 300ms}});
    ASSERT_TRUE(a.acquire(0ms));
    EXPECT_TRUE(a.extend(5s));
    EXPECT_GT(s.server.command({"PTTL", a.key()}).integer(), 4000);
    EXPECT_GT(a.current()->remaining(), 4s);
    EXPECT_THROW((void)a.extend(0ms), invalid_argument);
    EXPECT_TRUE(a.extend());  // back to the configured 300 ms
    std::this_thread::sleep_for(400ms);
    EXPECT_TRUE(a.lost());
    EXPECT_FALSE(a.extend());
    EXPECT_THROW(a.check_held(), lock_lost);
    EXPECT_FALSE(a.release());
}

TEST(FairLock, WatchdogKeepsTheLockPastItsTtl) {
    one_server s;
    fair_lock a(s.pool, "dog", {.timing = {.ttl = 300ms}, .watchdog = true});
    std::atomic<int> losses{0};
    auto c = a.on_lost([&](const std::string&) { ++losses; });
    ASSERT_TRUE(a.acquire(0ms));
    std::this_thread::sleep_for(1200ms);
    EXPECT_FALSE(a.lost());
    a.check_held();
    EXPECT_GT(s.server.command({"PTTL", a.key()}).integer(), 0);
    // Someone deletes it: the watchdog finds out and reports the loss.
    (void)s.server.command({"DEL", a.key()});
    EXPECT_TRUE(eventually([&] { return losses.load() == 1; }, 2s));
    EXPECT_TRUE(a.lost());
    EXPECT_FALSE(a.release());
}

TEST(FairLock, TimedOutWaiterLeavesAndDoesNotDelayTheNext) {
    one_server s;
    fair_lock holder(s.pool, "leave", {.timing = {.ttl = 30s}});
    // Long leases: were the timed-out waiter still queued, the next one would wait seconds.
    fair_lock early(s.pool, "leave", {.timing = {.ttl = 30s}, .waiter_lease = 6s});
    fair_lock next(s.pool, "leave", {.timing = {.ttl = 30s}, .waiter_lease = 6s});
    ASSERT_TRUE(holder.acquire(0ms));
    auto e = std::async(std::launch::async, [&] { return early.acquire(400ms); });
    ASSERT_TRUE(eventually([&] { return queue_of(s.server, early).size() == 1; }));
    auto n = std::async(std::launch::async, [&] { return next.acquire(20s); });
    ASSERT_TRUE(eventually([&] { return queue_of(s.server, next).size() == 2; }));
    EXPECT_EQ(queue_of(s.server, next),
              (std::vector<std::string>{early.waiter_id(), next.waiter_id()}));
    EXPECT_FALSE(e.get());  // timed out...
    EXPECT_EQ(queue_of(s.server, next), std::vector<std::string>{next.waiter_id()});  // ...and left
    const auto t0 = clock_type::now();
    EXPECT_TRUE(holder.release());
    ASSERT_TRUE(n.get());
    EXPECT_LT(clock_type::now() - t0, 1s);
    next.unlock();
}

TEST(FairLock, AcquisitionOrderIsRequestOrderFor8Processes) {
    one_server s;
    const std::string resource = "order8";
    fair_lock gatekeeper(s.pool, resource, {.timing = {.ttl = 30s}});
    ASSERT_TRUE(gatekeeper.acquire(0ms));
    const std::string queue = gatekeeper.key() + ":queue";
    std::vector<redcoord::testing::process> kids;
    const auto t0 = clock_type::now();
    for (int i = 0; i < 8; ++i) {
        // Each process asks only once the one before it is seen in the queue: a known order.
        kids.emplace_back(std::vector<std::string>{FAIR_CHILD_PATH, s.server.url(), resource,
                                                   std::to_string(i), "3000", "20", "10000"});
        ASSERT_TRUE(eventually(
            [&] {
                return s.server.command({"LLEN", queue}).integer() == i + 1;
            },
            10s))
            << "process " << i << " did not queue";
    }
    EXPECT_TRUE(gatekeeper.release());
    for (auto& k : kids) {
        const auto st = k.wait_for(20s);
        ASSERT_TRUE(st.has_value());
        EXPECT_EQ(*st, 0);
    }
    std::vector<std::string> order;
    const auto r = s.server.command({"LRANGE", "order:" + resource, "0", "-1"});
    for (const auto& e : r.elements()) order.push_back(e.text());
    EXPECT_EQ(order, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7"}));
    EXPECT_LT(clock_type::now() - t0, 15s);
    EXPECT_TRUE(s.server.command({"LLEN", queue}).integer() == 0);
}

TEST(FairLock, ThreadsOfOneProcessKeepExclusion) {
    one_server s;
    constexpr int threads = 4;
    std::vector<std::unique_ptr<fair_lock>> locks;
    for (int i = 0; i < threads; ++i)
        locks.push_back(
            std::make_unique<fair_lock>(s.pool, "many", fair_lock_options{.timing = {.ttl = 10s}}));
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    std::vector<int> counts(threads, 0);
    const auto until = clock_type::now() + 1500ms;
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i)
        ts.emplace_back([&, i] {
            while (clock_type::now() < until) {
                if (!locks[i]->acquire(500ms)) continue;
                if (inside.fetch_add(1) != 0) ++overlaps;
                ++counts[i];
                inside.fetch_sub(1);
                locks[i]->unlock();
            }
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(overlaps.load(), 0);
    int total = 0, least = counts[0];
    for (int c : counts) {
        total += c;
        least = std::min(least, c);
    }
    // FIFO: every contender gets a fair share (an even share is total / threads).
    EXPECT_GE(least * threads * 10, total * 7)
        << counts[0] << " " << counts[1] << " " << counts[2] << " " << counts[3];
    EXPECT_TRUE(s.server.keys_without_ttl().empty());
}

TEST(FairLock, BadInputIsATypedErrorAndOddNamesStayExact) {
    one_server s;
    EXPECT_THROW(fair_lock(s.pool, ""), invalid_argument);
    EXPECT_THROW(fair_lock(s.pool, "a\nb"), invalid_argument);
    EXPECT_THROW(fair_lock(s.pool, "}x"), invalid_argument);
    EXPECT_THROW(fair_lock(s.pool, std::string(2000, 'x')), invalid_argument);
    EXPECT_THROW(fair_lock(s.pool, "x", {.timing = {.ttl = 0ms}}), invalid_argument);
    EXPECT_THROW(fair_lock(s.pool, "x", {.timing = {.drift_factor = 0.5}}), invalid_argument);
    EXPECT_THROW(fair_lock(s.pool, "x", {.waiter_lease = 2ms}), invalid_argument);
    EXPECT_THROW(fair_lock(s.pool, "x",
                           {.timing = {.ttl = 1s}, .replication = {.replicas = 1, .timeout = 1s}}),
                 invalid_argument);
    EXPECT_THROW(fair_lock(s.pool, "x", {.watchdog = true, .max_extensions = 0}), invalid_argument);
    connection_pool tiny(s.server.endpoint(), {.max_size = 1});
    EXPECT_THROW(fair_lock(tiny, "x", {.watchdog = true}), invalid_argument);

    // Glob characters and binary bytes: exact names, exact channels.
    const std::string odd("a*b?[c]\\d\x01\xff", 11);
    fair_lock a(s.pool, odd, {.timing = {.ttl = 30s}}), b(s.pool, "a*b?[c]\\d"),
        w(s.pool, odd, {.timing = {.ttl = 30s}});
    ASSERT_TRUE(a.acquire(0ms));
    EXPECT_TRUE(b.try_lock());  // a different resource, not matched as a pattern
    b.unlock();
    auto got = std::async(std::launch::async, [&] { return w.acquire(10s); });
    ASSERT_TRUE(eventually([&] { return queue_of(s.server, w).size() == 1; }));
    const auto t0 = clock_type::now();
    EXPECT_TRUE(a.release());
    ASSERT_TRUE(got.get());
    EXPECT_LT(clock_type::now() - t0, 500ms);  // woken on its own (binary) channel
    w.unlock();
}

TEST(FairLock, DestructorReleasesAndHandsOver) {
    one_server s;
    fair_lock w(s.pool, "raii", {.timing = {.ttl = 30s}});
    std::future<std::optional<lock_acquisition>> got;
    {
        fair_lock a(s.pool, "raii", {.timing = {.ttl = 30s}});
        ASSERT_TRUE(a.acquire(0ms));
        got = std::async(std::launch::async, [&] { return w.acquire(10s); });
        ASSERT_TRUE(eventually([&] { return queue_of(s.server, w).size() == 1; }));
    }
    const auto t0 = clock_type::now();
    ASSERT_TRUE(got.get());
    EXPECT_LT(clock_type::now() - t0, 500ms);
    EXPECT_TRUE(w.release());
}

TEST(FairLock, WithReplicasAnUnacknowledgedAcquisitionIsGivenBackAndItsWaiterKeepsItsTurn) {
    redcoord::testing::master_and_replica s;
    fair_lock_options o{.timing = {.ttl = 10s}, .replication = {.replicas = 1, .timeout = 100ms}};
    fair_lock a(s.pool, "rep", o), b(s.pool, "rep", o);
    ASSERT_TRUE(a.acquire(0ms));
    EXPECT_TRUE(a.extend());  // acknowledged by the replica
    EXPECT_TRUE(a.release());
    s.replica->pause();
    EXPECT_FALSE(a.try_lock());  // the replica does not acknowledge: not counted...
    EXPECT_TRUE(s.master.command({"GET", a.key()}).is_nil());  // ...and given back at once
    // A waiter whose acquisitions are not acknowledged stays at the head of the queue...
    auto got = std::async(std::launch::async, [&] { return a.acquire(5s); });
    ASSERT_TRUE(eventually(
        [&] { return queue_of(s.master, a) == std::vector<std::string>{a.waiter_id()}; }));
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(b.try_lock());  // ...so a newcomer does not overtake it
    s.replica->resume();
    ASSERT_TRUE(got.get());  // and gets it once the replica answers
    EXPECT_TRUE(a.release());
}

TEST(FairLock, AWaiterStalledPastItsLeaseLosesItsPlaceAndQueuesAgain) {
    one_server s;
    fair_lock holder(s.pool, "lapse", {.timing = {.ttl = 30s}});
    ASSERT_TRUE(holder.acquire(0ms));
    const std::string queue = holder.key() + ":queue";
    redcoord::testing::process stalled(std::vector<std::string>{
        FAIR_CHILD_PATH, s.server.url(), "lapse", "stalled", "600", "0", "10000"});
    ASSERT_TRUE(eventually([&] { return s.server.command({"LLEN", queue}).integer() == 1; }));
    const auto stalled_id = s.server.command({"LINDEX", queue, "0"}).text();
    fair_lock live(s.pool, "lapse", {.timing = {.ttl = 30s}, .waiter_lease = 5s});
    auto b = std::async(std::launch::async, [&] {
        if (!live.acquire(10s)) return false;
        (void)s.pool.command({"RPUSH", "order:lapse", "live"});
        std::this_thread::sleep_for(50ms);
        return live.release();
    });
    ASSERT_TRUE(eventually([&] { return s.server.command({"LLEN", queue}).integer() == 2; }));
    stalled.signal(SIGSTOP);  // stalled past its lease (paused, starved of CPU)
    ASSERT_TRUE(eventually([&] {
        return s.server.command({"EXISTS", holder.key() + ":waiter:" + stalled_id}).integer() == 0;
    }));
    EXPECT_TRUE(holder.release());  // the purge skips it: `live` is the head now
    ASSERT_TRUE(b.get());
    stalled.signal(SIGCONT);  // its next refresh queues it again, at the tail, and it gets the lock
    EXPECT_EQ(stalled.wait_for(10s), std::optional<int>(0));
    const auto r = s.server.command({"LRANGE", "order:lapse", "0", "-1"});
    ASSERT_EQ(r.elements().size(), 2u);
    EXPECT_EQ(r.elements()[0].text(), "live");
    EXPECT_EQ(r.elements()[1].text(), "stalled");
    EXPECT_TRUE(s.server.command({"LLEN", queue}).integer() == 0);
}
