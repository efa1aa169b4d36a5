// The semaphore's engine (limit/src/semaphore_engine.hpp) over seeded schedules of clients
// that acquire, extend, release, pause past their leases and die: never more than N permits
// held by live leases, nor by clients whose validity says they hold them; fencing tokens
// strictly increase; a dead holder's permits come back after the TTL. Broken variants (an
// extension that revives an ended lease, leases that never end) are caught.

#include "semaphore_engine.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace redcoord::detail;

namespace {

struct engine {
    std::function<semaphore_acquired(semaphore_state&, std::int64_t, const std::string&,
                                     std::uint64_t, std::uint64_t, std::int64_t,
                                     const semaphore_asker&)>
        acquire = semaphore_acquire;
    std::function<bool(semaphore_state&, std::int64_t, const std::string&, std::uint64_t,
                       std::int64_t)>
        extend = semaphore_extend;
};

struct client {
    std::optional<std::string> token;  // holding
    std::string waiter_id;             // while it waits (queued after a refusal)
    std::uint64_t n = 0;
    std::int64_t valid_until = 0;  // client side: sent_at + ttl - drift
};

constexpr std::int64_t ttl = 1'000'000;           // 1 s
constexpr std::int64_t drift = ttl / 100 + 2000;  // as the driver: 1 % + 2 ms

// Runs one schedule; returns a description of the first broken invariant, or "".
std::string run_schedule(const engine& e, std::uint64_t permits, std::uint32_t seed, int steps,
                         bool fifo = false) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> pick(0, 99);
    std::uniform_int_distribution<std::uint64_t> want(1, permits);
    std::uniform_int_distribution<std::int64_t> gap(0, ttl / 20), lag(0, 3000), pause(ttl, 3 * ttl);
    std::vector<client> clients(6);
    semaphore_state s;
    std::int64_t now = 1'700'000'000'000'000;
    std::int64_t last_fence = 0;
    int next_token = 0;
    for (int step = 0; step < steps; ++step) {
        now += gap(rng);
        auto& c = clients[static_cast<std::size_t>(pick(rng)) % clients.size()];
        const int what = pick(rng);
        // The server handles a request a little after the client sent it.
        const auto at_server = now + lag(rng);
        if (!c.token) {
            const auto token = "t" + std::to_string(next_token++);
            const auto n = c.waiter_id.empty() ? want(rng) : c.n;
            // Half the attempts wait (and queue once refused), half are one-shot.
            if (c.waiter_id.empty() && what < 50) c.waiter_id = "w" + std::to_string(next_token);
            const semaphore_asker who{c.waiter_id, ttl / 10, ttl / 20, fifo};
            const auto r = e.acquire(s, at_server, token, n, permits, ttl, who);
            if (r.acquired) {
                if (r.fencing_token <= last_fence) return "fencing token did not increase";
                last_fence = r.fencing_token;
                c = {token, "", n, now + ttl - drift};
            } else {
                c.n = n;
            }
        } else if (what < 30) {
            (void)semaphore_release(s, *c.token, c.n);
            c = {};
        } else if (what < 70) {
            // Extends whether or not its validity has passed (a late watchdog retry).
            if (e.extend(s, at_server, *c.token, c.n, ttl))
                c.valid_until = now + ttl - drift;
            else
                c = {};
        } else if (what < 80) {
            now += pause(rng);  // this client (and the world) moves on past its lease
        } else if (what < 85) {
            c = {};  // dies holding: its leases stay until they end
        }
        // Invariants at the time of the latest request the server has seen.
        const auto t = std::max(now, at_server);
        if (semaphore_live(s, t) > permits) return "more live leases than permits";
        std::uint64_t believed = 0;
        for (const auto& k : clients)
            if (k.token && k.valid_until > t) believed += k.n;
        if (believed > permits) return "more permits trusted by holders than permits";
    }
    return "";
}

// Every client dies holding; one TTL later all permits must be free again.
bool dead_holders_come_back(const engine& e, std::uint64_t permits) {
    semaphore_state s;
    std::int64_t now = 1'700'000'000'000'000;
    for (std::uint64_t i = 0; i < permits; ++i)
        if (!e.acquire(s, now, "dead" + std::to_string(i), 1, permits, ttl, {}).acquired)
            return false;
    // A waiter queues and dies too: its entry lapses as its leases do.
    const auto refused =
        e.acquire(s, now + 10, "late", 1, permits, ttl, {"dead-waiter", ttl / 2, 0});
    if (refused.acquired || refused.next_free_us <= 0 || refused.next_free_us > ttl) return false;
    return e.acquire(s, now + ttl, "after", permits, permits, ttl, {}).acquired;
}

bool violates(const engine& e, std::uint32_t seeds) {
    for (std::uint64_t permits : {1u, 3u, 5u})
        for (std::uint32_t seed = 1; seed <= seeds; ++seed)
            if (!run_schedule(e, permits, seed, 3000).empty()) return true;
    return false;
}

}  // namespace

TEST(SemaphoreEngine, NeverMorePermitsThanNHeldByLiveLeasesOrTrustedByHolders) {
    for (std::uint64_t permits : {1u, 2u, 3u, 5u})
        for (std::uint32_t seed = 1; seed <= 60; ++seed)
            ASSERT_EQ(run_schedule(engine{}, permits, seed, 3000), "")
                << "permits " << permits << " seed " << seed;
}

TEST(SemaphoreEngine, FifoNeverMorePermitsThanNHeldByLiveLeasesOrTrustedByHolders) {
    for (std::uint64_t permits : {1u, 2u, 3u, 5u})
        for (std::uint32_t seed = 1; seed <= 60; ++seed)
            ASSERT_EQ(run_schedule(engine{}, permits, seed, 3000, true), "")
                << "permits " << permits << " seed " << seed;
}

TEST(SemaphoreEngine, FifoGrantsInArrivalOrderAndSkipsDeadWaiters) {
    semaphore_state s;
    std::int64_t now = 1'000'000;
    auto who = [](const char* id) { return semaphore_asker{id, ttl / 10, ttl / 20, true}; };
    ASSERT_TRUE(semaphore_acquire(s, now, "a", 1, 1, ttl, who("a")).acquired);
    // w1, w2, w3 wait in that order.
    for (const char* w : {"w1", "w2", "w3"})
        EXPECT_FALSE(semaphore_acquire(s, now, std::string(w) + "-1", 1, 1, ttl, who(w)).acquired);
    EXPECT_EQ(s.queue, (std::vector<std::string>{"w1", "w2", "w3"}));
    (void)semaphore_release(s, "a", 1);
    // The permit is free: a newcomer, and w3 and w2, ask before w1 and are refused.
    EXPECT_FALSE(semaphore_acquire(s, now, "n", 1, 1, ttl).acquired);
    EXPECT_FALSE(semaphore_acquire(s, now, "w3-2", 1, 1, ttl, who("w3")).acquired);
    EXPECT_FALSE(semaphore_acquire(s, now, "w2-2", 1, 1, ttl, who("w2")).acquired);
    EXPECT_TRUE(semaphore_acquire(s, now, "w1-2", 1, 1, ttl, who("w1")).acquired);
    EXPECT_EQ(s.queue, (std::vector<std::string>{"w2", "w3"}));
    (void)semaphore_release(s, "w1-2", 1);
    // w2 dies: only w3 keeps asking, so w2's entry lapses (its sleep plus grace) and w3,
    // behind it, gets the permit once it has.
    now += ttl / 10;
    EXPECT_FALSE(semaphore_acquire(s, now, "w3-3", 1, 1, ttl, who("w3")).acquired);
    now += ttl / 10;
    EXPECT_TRUE(semaphore_acquire(s, now, "w3-4", 1, 1, ttl, who("w3")).acquired);
    EXPECT_TRUE(s.queue.empty());
}

TEST(SemaphoreEngine, FifoHeadAskingForMoreHoldsBackThoseBehindIt) {
    semaphore_state s;
    const std::int64_t now = 1'000'000;
    auto who = [](const char* id) { return semaphore_asker{id, ttl / 10, ttl / 20, true}; };
    ASSERT_TRUE(semaphore_acquire(s, now, "a", 2, 3, ttl).acquired);
    EXPECT_FALSE(semaphore_acquire(s, now, "big-1", 2, 3, ttl, who("big")).acquired);
    // One permit is free, and small needs one, but big came first.
    EXPECT_FALSE(semaphore_acquire(s, now, "small-1", 1, 3, ttl, who("small")).acquired);
    (void)semaphore_release(s, "a", 2);
    EXPECT_TRUE(semaphore_acquire(s, now, "big-2", 2, 3, ttl, who("big")).acquired);
    EXPECT_TRUE(semaphore_acquire(s, now, "small-2", 1, 3, ttl, who("small")).acquired);
}

TEST(SemaphoreEngine, DeadHoldersPermitsComeBackAfterTheTtl) {
    for (std::uint64_t permits : {1u, 3u}) EXPECT_TRUE(dead_holders_come_back(engine{}, permits));
}

TEST(SemaphoreEngine, BrokenExtensionThatRevivesAnEndedLeaseIsCaught) {
    engine e;
    e.extend = [](semaphore_state& s, std::int64_t now, const std::string& token, std::uint64_t n,
                  std::int64_t ttl_us) {
        // ZADD without XX or the existence check: an ended lease is written back.
        for (std::uint64_t i = 1; i <= n; ++i) s.leases[semaphore_member(token, i)] = now + ttl_us;
        return true;
    };
    EXPECT_TRUE(violates(e, 10));
}

TEST(SemaphoreEngine, BrokenLeasesThatNeverEndAreCaught) {
    engine e;
    e.acquire = [](semaphore_state& s, std::int64_t now, const std::string& token, std::uint64_t n,
                   std::uint64_t limit, std::int64_t, const semaphore_asker& who) {
        // As if the leases had no end: a dead holder's permits never come back.
        constexpr std::int64_t never = std::int64_t{1} << 62;
        return semaphore_acquire(s, now, token, n, limit, never - now, who);
    };
    EXPECT_FALSE(dead_holders_come_back(e, 1));
    EXPECT_FALSE(dead_holders_come_back(e, 3));
}

TEST(SemaphoreEngine, AcquiresSeveralPermitsAtomically) {
    semaphore_state s;
    const std::int64_t now = 1'000'000;
    ASSERT_TRUE(semaphore_acquire(s, now, "a", 2, 3, ttl).acquired);
    const auto refused = semaphore_acquire(s, now, "b", 2, 3, ttl);
    EXPECT_FALSE(refused.acquired);
    EXPECT_EQ(refused.held, 2u);
    EXPECT_EQ(s.leases.size(), 2u);  // all or nothing: b took none
    EXPECT_EQ(refused.next_free_us, ttl);
    EXPECT_TRUE(semaphore_acquire(s, now, "c", 1, 3, ttl).acquired);
    EXPECT_EQ(semaphore_release(s, "a", 2), 2u);
    EXPECT_TRUE(semaphore_acquire(s, now, "b", 2, 3, ttl).acquired);
}

TEST(SemaphoreEngine, ExtensionAfterTheLeaseEndedLosesTheWholeHolding) {
    semaphore_state s;
    ASSERT_TRUE(semaphore_acquire(s, 0, "a", 2, 2, ttl).acquired);
    EXPECT_TRUE(semaphore_extend(s, ttl / 2, "a", 2, ttl));
    EXPECT_FALSE(semaphore_extend(s, ttl / 2 + ttl, "a", 2, ttl));
    EXPECT_TRUE(s.leases.empty());
}

TEST(SemaphoreEngine, LoweringNRevokesNothingAndHandsOutNothingUntilBelowIt) {
    semaphore_state s;
    ASSERT_TRUE(semaphore_acquire(s, 0, "a", 2, 4, ttl).acquired);
    ASSERT_TRUE(semaphore_acquire(s, 0, "b", 2, 4, ttl).acquired);
    EXPECT_FALSE(semaphore_acquire(s, 0, "c", 1, 2, ttl).acquired);  // N lowered to 2
    EXPECT_EQ(s.leases.size(), 4u);
    (void)semaphore_release(s, "a", 2);
    EXPECT_FALSE(semaphore_acquire(s, 0, "c", 1, 2, ttl).acquired);  // still 2 held
    (void)semaphore_release(s, "b", 2);
    EXPECT_TRUE(semaphore_acquire(s, 0, "c", 1, 2, ttl).acquired);
}

TEST(SemaphoreEngine, NewcomersDoNotBargeAheadOfQueuedWaiters) {
    semaphore_state s;
    const std::int64_t now = 1'000'000;
    ASSERT_TRUE(semaphore_acquire(s, now, "a", 2, 2, ttl).acquired);
    // b waits and is refused: it is queued.
    EXPECT_FALSE(semaphore_acquire(s, now, "b1", 1, 2, ttl, {"b", ttl, 0}).acquired);
    (void)semaphore_release(s, "a", 2);
    // Two permits free, one queued waiter: a newcomer may take one, leaving one for b.
    EXPECT_TRUE(semaphore_acquire(s, now, "c", 1, 2, ttl).acquired);
    EXPECT_FALSE(semaphore_acquire(s, now, "d", 1, 2, ttl).acquired);  // the last is b's
    EXPECT_TRUE(semaphore_acquire(s, now, "b2", 1, 2, ttl, {"b", ttl, 0}).acquired);
    EXPECT_TRUE(s.waiters.empty());
}

TEST(SemaphoreEngine, ADeadWaitersEntryLapses) {
    semaphore_state s;
    ASSERT_TRUE(semaphore_acquire(s, 0, "a", 1, 1, ttl).acquired);
    // b waits for a's lease (it ends at ttl) plus a grace of 1000 us.
    EXPECT_FALSE(semaphore_acquire(s, 0, "b1", 1, 1, ttl, {"b", 5000, 1000}).acquired);
    EXPECT_EQ(s.waiters.at("b"), ttl + 1000);
    (void)semaphore_release(s, "a", 1);
    EXPECT_FALSE(semaphore_acquire(s, 500, "c", 1, 1, ttl).acquired);        // b's turn
    EXPECT_TRUE(semaphore_acquire(s, ttl + 1000, "c", 1, 1, ttl).acquired);  // b never came
}
