// fair_engine in a simulated world: several waiters, each with its own engine, against a model
// of the fair scripts (the queue, the waiters' leases, the unicast hand-off), on a virtual
// clock with round trips and publish delays. Waiters loop acquire / hold / release, and some
// die while queued. Checked: a live waiter's lease never lapses (its refreshes come in time:
// the purge only ever drops the dead), every release is followed by a grant to the first live
// waiter in the queue (FIFO among the living) within a round trip or two when the head is
// alive, and within the dead heads' leases plus a refresh period when it is not.
#include "fair_engine.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord::detail;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using time_point = fair_clock::time_point;

namespace {

const time_point t0 = time_point{} + std::chrono::hours(1);
constexpr microseconds rtt{200};
constexpr microseconds publish_delay{100};

// The fair scripts' semantics (fair_scripts.cpp), waiters by index.
struct model_server {
    int holder = -1;
    std::deque<int> queue;
    std::map<int, time_point> lease_until;
    std::vector<int> purged;  // the waiters the purge dropped (the world checks and clears it)
    std::uint64_t fence = 0;

    bool alive(int w, time_point now) const {
        auto it = lease_until.find(w);
        return it != lease_until.end() && it->second > now;
    }
    int live_head(int me, time_point now) {
        while (!queue.empty() && queue.front() != me && !alive(queue.front(), now)) {
            purged.push_back(queue.front());
            queue.pop_front();
        }
        return queue.empty() ? -1 : queue.front();
    }
    int position(int me) const {
        for (std::size_t i = 0; i < queue.size(); ++i)
            if (queue[i] == me) return static_cast<int>(i);
        return -1;
    }
    // Returns the fencing token when granted (0: refused, `r` filled), publishing through `wake`.
    std::uint64_t acquire(int me, fair_mode mode, milliseconds lease, time_point now,
                          fair_refusal& r, const std::function<void(int)>& wake) {
        int head = live_head(me, now);
        if (holder < 0 && (head < 0 || head == me)) {
            holder = me;
            if (head == me) queue.pop_front();
            lease_until.erase(me);
            return ++fence;
        }
        r = {};
        r.pttl = holder >= 0 ? 1000000 : -2;  // holders here do not expire
        if (mode == fair_mode::queue) {
            r.position = position(me);
            if (r.position < 0) {
                queue.push_back(me);
                r.position = static_cast<int>(queue.size()) - 1;
            }
            lease_until[me] = now + lease;
        } else {
            std::erase(queue, me);
            lease_until.erase(me);
            head = live_head(me, now);
        }
        if (holder < 0 && head >= 0 && head != me) {
            wake(head);
            r.head_lease =
                std::chrono::duration_cast<milliseconds>(lease_until[head] - now).count();
        }
        return 0;
    }
    void release(int me, time_point now, const std::function<void(int)>& wake) {
        if (holder != me) return;
        holder = -1;
        const int head = live_head(-1, now);
        if (head >= 0) wake(head);
    }
};

struct event {
    time_point at;
    std::uint64_t order;  // FIFO among equal times
    std::function<void()> run;
    bool operator>(const event& o) const { return at != o.at ? at > o.at : order > o.order; }
};

struct world {
    std::mt19937_64 rng;
    fair_settings settings;
    model_server server;
    std::priority_queue<event, std::vector<event>, std::greater<>> events;
    std::uint64_t order = 0;
    time_point now = t0;

    struct waiter {
        std::optional<fair_engine> eng;
        bool subscribed = false;
        bool dead = false;
        bool waiting = false;  // in a wait step
        bool listen = false;
        std::uint64_t wait_seq = 0;  // identifies the current wait (stale timers are ignored)
        std::uint64_t generation = 0, seen = 0;
        time_point sent{};
        std::optional<time_point> dies_at;
        int grants = 0;
    };
    std::vector<waiter> ws;

    // The check armed by a release: who must get the lock next, and by when.
    int expect_next = -1;
    time_point expect_by{};
    std::string failure;

    std::int64_t pick(std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    }

    void at(time_point t, std::function<void()> f) { events.push({t, order++, std::move(f)}); }

    // A waiter dies at its dies_at (only while it waits: a grant cancels the death).
    bool is_dead(int w) {
        auto& x = ws[w];
        if (!x.dead && x.dies_at && now >= *x.dies_at) x.dead = true;
        return x.dead;
    }

    void fail(const std::string& why) {
        if (failure.empty()) failure = why;
    }

    // The purge only ever drops the dead: a live waiter's refreshes keep its lease.
    void check_purged() {
        for (int p : server.purged)
            if (!is_dead(p))
                fail("live waiter " + std::to_string(p) + " lost its place (its lease lapsed)");
        server.purged.clear();
    }

    void wake(int w) {
        at(now + publish_delay, [this, w] {
            auto& x = ws[w];
            if (is_dead(w) || !x.subscribed) return;  // not listening: the message is lost
            ++x.generation;
            if (x.waiting && x.listen) end_wait(w, true);
        });
    }

    void end_wait(int w, bool notified) {
        auto& x = ws[w];
        x.waiting = false;
        ++x.wait_seq;
        drive(w, x.eng->on_wake(notified, now));
    }

    void start_cycle(int w) {
        at(now + microseconds(pick(0, 3000)), [this, w] {
            auto& x = ws[w];
            if (is_dead(w)) return;
            // Half the cycles start unsubscribed (a waiter that listens only while it waits), so
            // hand-offs published before the subscription are common.
            if (pick(0, 1) == 0) x.subscribed = false;
            x.eng.emplace(settings, now, now, true, x.subscribed);
            if (pick(1, 100) <= 4) x.dies_at = now + microseconds(pick(0, 3000));
            drive(w, x.eng->start(now));
        });
    }

    void drive(int w, fair_step st) {
        auto& x = ws[w];
        if (is_dead(w)) return;
        switch (st.what) {
            case fair_do::attempt: {
                x.seen = x.generation;
                x.sent = now;
                fair_refusal r;
                const auto fence = server.acquire(w, st.mode, settings.waiter_lease, now, r,
                                                  [this](int h) { wake(h); });
                check_purged();
                if (fence > 0)
                    x.dies_at.reset();  // holders do not die here (they would hold until the TTL)
                at(now + rtt, [this, w, fence, r] {
                    auto& y = ws[w];
                    if (is_dead(w)) return;
                    if (fence > 0) {
                        granted(w);
                        drive(w, y.eng->on_granted(fence, 0, y.sent, now));
                    } else {
                        drive(w, y.eng->on_refused(r, y.sent, now));
                    }
                });
                break;
            }
            case fair_do::subscribe:
                x.subscribed = true;
                drive(w, x.eng->on_subscribed(true, now));
                break;
            case fair_do::wait: {
                x.waiting = true;
                x.listen = st.listen;
                const auto seq = ++x.wait_seq;
                if (st.listen && x.generation != x.seen) {  // a hand-off came after the attempt
                    end_wait(w, true);
                    break;
                }
                at(st.until, [this, w, seq] {
                    auto& y = ws[w];
                    if (!is_dead(w) && y.waiting && y.wait_seq == seq) end_wait(w, false);
                });
                break;
            }
            case fair_do::acquired:
                at(now + microseconds(pick(0, 2000)), [this, w] { release(w); });
                break;
            default:
                fail("unexpected step " + std::to_string(static_cast<int>(st.what)) +
                     " of an unlimited wait");
        }
    }

    void granted(int w) {
        ++ws[w].grants;
        if (expect_next >= 0) {
            if (!is_dead(expect_next)) {
                if (w != expect_next)
                    fail("waiter " + std::to_string(w) + " got the lock before " +
                         std::to_string(expect_next) +
                         ", the first live waiter in the queue at the release");
                else if (now > expect_by)
                    fail("the hand-off to waiter " + std::to_string(w) + " came " +
                         std::to_string(
                             std::chrono::duration_cast<microseconds>(now - expect_by).count()) +
                         " us after its bound");
            }
            expect_next = -1;
        }
    }

    void release(int w) {
        // Who must come next: the first live waiter in the queue, delayed by the dead ones
        // ahead of it (their leases, then a refresh period of the one that finds them dead).
        expect_next = -1;
        time_point dead_until{};
        int dead_ahead = 0;
        for (int q : server.queue) {
            if (is_dead(q)) {
                ++dead_ahead;
                dead_until = std::max(dead_until, server.lease_until[q]);
                continue;
            }
            expect_next = q;
            break;
        }
        const auto slack = 3 * rtt + publish_delay + 2ms;
        const auto refresh = std::max(settings.waiter_lease / 3, milliseconds(1));
        if (dead_ahead == 0) {
            expect_by = now + slack;  // the head is woken by the hand-off
        } else if (dead_ahead == 1 && expect_next >= 0 && server.position(expect_next) == 1) {
            // Right behind one dead head: it learns at its next refresh that the lock is free and
            // then wakes when that head's lease runs out.
            expect_by = std::max(ws[expect_next].sent + refresh, dead_until + 1ms) + slack;
        } else {
            expect_by = std::max(now, dead_until) + refresh + slack;  // found by a refresh
        }
        server.release(w, now, [this](int h) { wake(h); });
        check_purged();
        start_cycle(w);
    }
};

}  // namespace

TEST(FairModel, LiveWaitersKeepTheirPlaceAndTheLockPassesInQueueOrder) {
    std::uint64_t total_grants = 0;
    for (std::uint32_t seed = 1; seed <= 150; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        world wd;
        wd.rng.seed(seed);
        wd.settings.ttl = 10s;
        wd.settings.waiter_lease = milliseconds(wd.pick(6, 60));
        const int n = static_cast<int>(wd.pick(2, 8));
        wd.ws.resize(static_cast<std::size_t>(n));
        for (int w = 0; w < n; ++w) wd.start_cycle(w);
        const auto end = t0 + 1s;
        while (!wd.events.empty() && wd.events.top().at < end && wd.failure.empty()) {
            auto e = wd.events.top();
            wd.events.pop();
            wd.now = e.at;
            e.run();
        }
        ASSERT_EQ(wd.failure, "");
        // Everyone still alive got its turns (a FIFO lock starves nobody).
        for (int w = 0; w < n; ++w)
            if (!wd.is_dead(w)) ASSERT_GT(wd.ws[w].grants, 0) << "waiter " << w;
        for (auto& x : wd.ws) total_grants += static_cast<std::uint64_t>(x.grants);
    }
    EXPECT_GT(total_grants, 10000u);  // the runs did something
}
