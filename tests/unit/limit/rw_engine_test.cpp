// The rw_lock's engine (limit/src/rw_engine.hpp) over seeded schedules of readers and writers
// that acquire, wait, extend, release, pause past their leases and die: a writer never
// overlaps a reader or another writer, neither by live leases nor by what holders trust;
// fencing tokens strictly increase; a waiting writer is not starved by a stream of readers;
// a dead writer's intent lapses. Broken variants (a writer that ignores readers, an extension
// that revives an ended lease, readers that ignore intents) are caught.

#include "rw_engine.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace redcoord::detail;

namespace {

using acquire_fn = std::function<rw_acquired(rw_state&, std::int64_t, const std::string&,
                                             std::int64_t, const rw_asker&)>;

struct engine {
    acquire_fn read = rw_acquire_read;
    acquire_fn write = rw_acquire_write;
    std::function<bool(rw_state&, std::int64_t, const std::string&, rw_mode, std::int64_t)> extend =
        rw_extend;
};

struct client {
    std::optional<std::string> token;  // holding
    rw_mode mode = rw_mode::read;
    std::string waiter_id;         // while it waits
    std::int64_t valid_until = 0;  // client side: sent_at + ttl - drift
};

constexpr std::int64_t ttl = 1'000'000;           // 1 s
constexpr std::int64_t drift = ttl / 100 + 2000;  // as the driver: 1 % + 2 ms
constexpr std::int64_t retry = ttl / 10, grace = ttl / 20;
constexpr std::int64_t start = 1'700'000'000'000'000;

// Runs one schedule; returns a description of the first broken invariant, or "".
std::string run_schedule(const engine& e, std::uint32_t seed, int steps) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> pick(0, 99);
    std::uniform_int_distribution<std::int64_t> gap(0, ttl / 20), lag(0, 3000), pause(ttl, 3 * ttl);
    std::vector<client> clients(6);
    rw_state s;
    std::int64_t now = start;
    std::int64_t last_fence = 0;
    int next_token = 0;
    for (int step = 0; step < steps; ++step) {
        now += gap(rng);
        auto& c = clients[static_cast<std::size_t>(pick(rng)) % clients.size()];
        const int what = pick(rng);
        const auto at_server = now + lag(rng);
        if (!c.token) {
            const auto token = "t" + std::to_string(next_token++);
            if (c.waiter_id.empty()) {
                c.mode = what % 3 == 0 ? rw_mode::write : rw_mode::read;
                if (what < 50) c.waiter_id = "w" + std::to_string(next_token);
            }
            const rw_asker who{c.waiter_id, retry, grace};
            const auto r =
                (c.mode == rw_mode::write ? e.write : e.read)(s, at_server, token, ttl, who);
            if (r.acquired) {
                if (r.fencing_token <= last_fence) return "fencing token did not increase";
                last_fence = r.fencing_token;
                c = {token, c.mode, "", now + ttl - drift};
            } else if (!c.waiter_id.empty() && what < 10) {
                rw_leave(s, c.waiter_id);  // a timed wait gives up
                c.waiter_id.clear();
            }
        } else if (what < 30) {
            (void)rw_release(s, at_server, *c.token, c.mode);
            c = {};
        } else if (what < 70) {
            // Extends whether or not its validity has passed (a late watchdog retry).
            if (e.extend(s, at_server, *c.token, c.mode, ttl))
                c.valid_until = now + ttl - drift;
            else
                c = {};
        } else if (what < 80) {
            now += pause(rng);  // this client (and the world) moves on past its lease
        } else if (what < 85) {
            c = {};  // dies holding: its lease stays until it ends
        }
        const auto t = std::max(now, at_server);
        if (rw_live_writer(s, t) && rw_live_readers(s, t) > 0)
            return "a live writer overlaps live readers";
        int writers = 0, readers = 0;
        for (const auto& k : clients) {
            if (!k.token || k.valid_until <= t) continue;
            (k.mode == rw_mode::write ? writers : readers) += 1;
        }
        if (writers > 1) return "two writers trust their holds at once";
        if (writers > 0 && readers > 0) return "a writer and a reader trust their holds at once";
    }
    return "";
}

bool violates(const engine& e, std::uint32_t seeds) {
    for (std::uint32_t seed = 1; seed <= seeds; ++seed)
        if (!run_schedule(e, seed, 3000).empty()) return true;
    return false;
}

// Readers arrive every ttl/4, each holding a full ttl, so shares always overlap; a writer
// waits (retrying every `retry`). Returns how long the writer waited, or -1 if starved for
// 20 ttls.
std::int64_t writer_wait_among_readers(const engine& e) {
    rw_state s;
    std::int64_t now = start;
    int n = 0;
    for (int i = 0; i < 4; ++i, now += ttl / 4)
        (void)e.read(s, now, "r" + std::to_string(n++), ttl, {});
    const auto asked = now;
    std::int64_t next_reader = now, next_writer = now;
    while (now < asked + 20 * ttl) {
        if (next_writer <= next_reader) {
            now = next_writer;
            if (e.write(s, now, "writer", ttl, {"w", retry, grace}).acquired) return now - asked;
            next_writer = now + retry;
        } else {
            now = next_reader;
            (void)e.read(s, now, "r" + std::to_string(n++), ttl, {});
            next_reader = now + ttl / 4;
        }
    }
    return -1;
}

}  // namespace

TEST(RwEngine, WriterNeverOverlapsAReaderOrAWriter) {
    for (std::uint32_t seed = 1; seed <= 200; ++seed)
        ASSERT_EQ(run_schedule(engine{}, seed, 3000), "") << "seed " << seed;
}

TEST(RwEngine, WaitingWriterIsNotStarvedByAStreamOfReaders) {
    const auto waited = writer_wait_among_readers(engine{});
    ASSERT_GE(waited, 0) << "the writer was starved";
    // The intent stops new shares at once; the shares that hold end within one ttl.
    EXPECT_LE(waited, ttl + retry);
}

TEST(RwEngine, DeadWritersIntentLapsesAndReadersGetInAgain) {
    rw_state s;
    const auto now = start;
    ASSERT_TRUE(rw_acquire_read(s, now, "r1", ttl).acquired);
    ASSERT_FALSE(rw_acquire_write(s, now + 1, "w", ttl, {"dead-writer", retry, grace}).acquired);
    // Its intent refuses new readers while it lives...
    const auto refused = rw_acquire_read(s, now + 2, "r2", ttl, {"r2", retry, grace});
    EXPECT_FALSE(refused.acquired);
    EXPECT_GT(refused.next_free_us, 0);
    EXPECT_LE(refused.next_free_us, retry + grace);
    // ...and the writer dies without refreshing it: one sleep plus the grace later, readers
    // are admitted again.
    EXPECT_TRUE(rw_acquire_read(s, now + 1 + retry + grace, "r3", ttl).acquired);
}

TEST(RwEngine, DeadHoldersLeasesEnd) {
    rw_state s;
    ASSERT_TRUE(rw_acquire_write(s, start, "w", ttl).acquired);
    EXPECT_FALSE(rw_acquire_read(s, start + ttl - 1, "r", ttl).acquired);
    EXPECT_TRUE(rw_acquire_read(s, start + ttl, "r", ttl).acquired);
    EXPECT_FALSE(rw_acquire_write(s, start + 2 * ttl - 1, "w2", ttl).acquired);
    EXPECT_TRUE(rw_acquire_write(s, start + 2 * ttl, "w2", ttl).acquired);
}

TEST(RwEngine, GivingUpWithdrawsTheIntent) {
    rw_state s;
    ASSERT_TRUE(rw_acquire_read(s, start, "r1", ttl).acquired);
    ASSERT_FALSE(rw_acquire_write(s, start, "w", ttl, {"w", retry, grace}).acquired);
    EXPECT_FALSE(rw_acquire_read(s, start, "r2", ttl).acquired);
    rw_leave(s, "w");
    EXPECT_TRUE(rw_acquire_read(s, start, "r2", ttl).acquired);
}

TEST(RwEngine, BrokenWriterThatIgnoresReadersIsCaught) {
    engine e;
    e.write = [](rw_state& s, std::int64_t now, const std::string& token, std::int64_t ttl_us,
                 const rw_asker&) {
        // Checks only for another writer, as if the readers' set were not read.
        rw_acquired r;
        if (s.writer && s.writer->second > now) return r;
        s.writer = {token, now + ttl_us};
        s.fence = s.fence == 0 ? now : s.fence + 1;
        r.acquired = true;
        r.fencing_token = s.fence;
        return r;
    };
    EXPECT_TRUE(violates(e, 20));
}

TEST(RwEngine, BrokenExtensionThatRevivesAnEndedLeaseIsCaught) {
    engine e;
    e.extend = [](rw_state& s, std::int64_t now, const std::string& token, rw_mode mode,
                  std::int64_t ttl_us) {
        // Writes the lease back without checking it is still live.
        if (mode == rw_mode::read)
            s.readers[token] = now + ttl_us;
        else
            s.writer = {token, now + ttl_us};
        return true;
    };
    EXPECT_TRUE(violates(e, 20));
}

TEST(RwEngine, BrokenReadersThatIgnoreIntentsStarveTheWriter) {
    engine e;
    e.read = [](rw_state& s, std::int64_t now, const std::string& token, std::int64_t ttl_us,
                const rw_asker& who) {
        s.intents.clear();  // as if no writer waited
        return rw_acquire_read(s, now, token, ttl_us, who);
    };
    EXPECT_EQ(writer_wait_among_readers(e), -1);
}
