// Randomized schedules for the leader_elector's engine, without a server: a model Redis with
// other candidates, rounds answered late, lost before or after the server ran them, replicas
// that do not acknowledge, handoff signals delivered or lost, resigns that fail, stops and
// restarts, and a driver timer that fires exactly at the due time, 1 ns before it, or late.
// Thousands of seeded runs check the invariants after every step:
//   pairing         elected/revoked strictly alternate, starting with elected, and stop()
//                   leaves none open;
//   leader_changed  never reports the same holder twice in a row, matches known_holder(),
//                   and says "me" whenever elected fires;
//   lease           is_leader(t) only before the lease end of a round the model saw confirmed
//                   (and while the model server holds our selector under that epoch, unless
//                   the server lost it, which the model does now and then); after any
//                   input carrying `now`, a leadership not revoked has not reached its lease end;
//   epoch           elected epochs never go down, a new leadership on the server gets a greater
//                   one, and the server holds that epoch for us when elected fires.
// Each check is shown to fail on a deliberately broken engine (BrokenEnginesAreCaught).
// A failing run prints its seed; rerun only it with ELECTOR_SEED=<seed>.
#include "elector_engine.hpp"
#include "round.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

// A namespace of its own: a unity batch compiles this file with others (tests/CMakeLists.txt).
namespace elector_schedule_test {

using namespace redcoord;
using namespace std::chrono_literals;
using detail::elector_command;
using detail::elector_engine;
using detail::elector_event;
using tp = std::chrono::steady_clock::time_point;
using ns = std::chrono::nanoseconds;

namespace {

constexpr auto term = 300ms;
constexpr auto retry = 100ms;

enum class mutation {
    none,
    drop_revoked,           // breaks pairing
    repeat_leader_changed,  // breaks leader_changed
    expire_one_tick_late,  // breaks the lease at its edge: [elected, end] instead of [elected, end)
    keep_first_epoch,      // breaks epochs
};

// The engine, optionally broken on purpose so that each invariant check is seen to fail.
class engine_under_test {
public:
    explicit engine_under_test(mutation m) : m_(m), e_("me", retry) {}
    void start(tp now) { e_.start(now); }
    void halt() { e_.halt(); }
    elector_command stop(tp now) { return e_.stop(bend(now)); }
    void expire(tp now) { e_.expire(bend(now)); }
    elector_command poll(tp now) { return e_.poll(bend(now)); }
    void round_done(tp now, tp started, const std::optional<campaign_result>& r) {
        e_.round_done(bend(now), started, r);
    }
    void handoff(const std::string& who) { e_.handoff(who); }
    elector_command resign(tp now) { return e_.resign(bend(now)); }
    void resign_done(bool deleted) { e_.resign_done(deleted); }
    void resign_failed() { e_.resign_failed(); }
    [[nodiscard]] std::optional<tp> next_due() const { return e_.next_due(); }
    [[nodiscard]] std::optional<tp> lease_end() const { return e_.lease_end(); }
    [[nodiscard]] bool is_leader(tp now) const { return e_.is_leader(bend(now)); }
    [[nodiscard]] std::uint64_t epoch(tp now) const { return e_.epoch(bend(now)); }
    [[nodiscard]] const std::optional<std::string>& known_holder() const {
        return e_.known_holder();
    }
    std::vector<elector_event> take_events() {
        std::vector<elector_event> out;
        for (auto& e : e_.take_events()) {
            if (m_ == mutation::drop_revoked && e.what == elector_event::kind::revoked) continue;
            if (m_ == mutation::keep_first_epoch && e.what == elector_event::kind::elected) {
                if (first_epoch_ == 0) first_epoch_ = e.epoch;
                e.epoch = first_epoch_;
            }
            if (m_ == mutation::repeat_leader_changed &&
                e.what == elector_event::kind::leader_changed)
                out.push_back(e);
            out.push_back(std::move(e));
        }
        return out;
    }

private:
    [[nodiscard]] tp bend(tp now) const {
        return m_ == mutation::expire_one_tick_late ? now - ns(1) : now;
    }
    mutation m_;
    elector_engine e_;
    std::uint64_t first_epoch_ = 0;
};

// The model Redis: the selector hash as the campaign and resign scripts see it.
struct model_server {
    std::optional<std::string> holder;
    std::uint64_t epoch = 0;
    std::uint64_t counter = 0;
    std::uint64_t leadership = 0;  // which leadership on the server; grows with each new one
    tp expiry{};

    void settle(tp t) {
        if (holder && t >= expiry) holder.reset();
    }
    void take(const std::string& who, tp t, std::uint64_t gap) {
        holder = who;
        epoch = counter + 1 + gap;  // the server clock may put the epoch ahead of the counter
        counter = epoch;
        expiry = t + term;
        ++leadership;
    }
    detail::round_reply campaign(tp t, std::uint64_t gap) {
        settle(t);
        if (!holder) {
            take("me", t, gap);
            return {true, epoch, 1, holder, true};
        }
        if (*holder == "me") {
            expiry = t + term;
            return {true, epoch, 1, holder, false};
        }
        return {false, epoch, 1, holder, false};
    }
    bool resign(tp t) {
        settle(t);
        if (holder != std::optional<std::string>("me")) return false;
        holder.reset();
        return true;
    }
    [[nodiscard]] bool ours(tp t, std::uint64_t e) const {
        // A selector the server lost (failover to a replica that missed it, eviction) no longer
        // proves anything about the leadership it held: the documented replicas == 0 caveat.
        return lost.count(e) != 0 ||
               (holder == std::optional<std::string>("me") && t < expiry && epoch == e);
    }
    void lose() {
        if (holder) lost.insert(epoch);
        holder.reset();
    }
    std::set<std::uint64_t> lost;
};

std::string text(const std::optional<std::string>& s) { return s ? "'" + *s + "'" : "none"; }

// Checks the invariants; keeps the first failure.
struct checker {
    std::string failure;
    bool leading = false;
    std::uint64_t last_epoch = 0;
    std::uint64_t last_leadership = 0;
    std::optional<std::string> last_changed;
    std::size_t elected = 0, revoked = 0;
    // epoch -> the latest lease end a confirmed round gave it
    std::map<std::uint64_t, tp> confirmed;

    void fail(const std::string& what, tp now) {
        if (failure.empty())
            failure = what + " (t = " + std::to_string(now.time_since_epoch().count()) + " ns)";
    }
    // `leadership`: the server's leadership when the round being reported ran there (the server
    // may have moved on while its answer travelled).
    void on_events(const std::vector<elector_event>& ev, const engine_under_test& e,
                   const model_server& s, tp now, std::uint64_t leadership) {
        for (const auto& x : ev) {
            switch (x.what) {
                case elector_event::kind::elected:
                    if (leading) fail("pairing: elected twice without revoked", now);
                    if (last_changed != std::optional<std::string>("me"))
                        fail("leader_changed: elected while the last reported holder is " +
                                 text(last_changed),
                             now);
                    if (elected > 0 && x.epoch < last_epoch)
                        fail("epoch: went down to " + std::to_string(x.epoch), now);
                    if (elected > 0 && leadership != last_leadership && x.epoch <= last_epoch)
                        fail("epoch: a new leadership got " + std::to_string(x.epoch) +
                                 ", not above " + std::to_string(last_epoch),
                             now);
                    if (!s.ours(now, x.epoch))
                        fail("epoch: elected under " + std::to_string(x.epoch) +
                                 ", the server holds " + std::to_string(s.epoch) + " for " +
                                 text(s.holder),
                             now);
                    leading = true;
                    last_epoch = x.epoch;
                    last_leadership = leadership;
                    ++elected;
                    break;
                case elector_event::kind::revoked:
                    if (!leading) fail("pairing: revoked without elected", now);
                    leading = false;
                    ++revoked;
                    break;
                case elector_event::kind::leader_changed:
                    if (x.identity == last_changed)
                        fail("leader_changed: " + text(x.identity) + " reported twice", now);
                    last_changed = x.identity;
                    break;
            }
        }
        if (e.known_holder() != last_changed)
            fail("leader_changed: known_holder " + text(e.known_holder()) + " but last reported " +
                     text(last_changed),
                 now);
    }
    [[nodiscard]] std::optional<tp> lease_of(std::uint64_t epoch) const {
        const auto it = confirmed.find(epoch);
        if (it == confirmed.end()) return std::nullopt;
        return it->second;
    }
    // `timed`: the engine's last input carried `now`, so it had the chance to expire.
    void observe(const engine_under_test& e, const model_server& s, tp now, bool timed) {
        if (e.is_leader(now)) {
            const auto ep = e.epoch(now);
            const auto end = lease_of(ep);
            if (!end || now >= *end)
                fail("lease: is_leader() past the lease end of its last confirmed round", now);
            if (!s.ours(now, ep))
                fail("lease: is_leader() while the server's selector is not ours under that epoch",
                     now);
        }
        if (timed && leading) {
            const auto end = lease_of(last_epoch);
            if (!end || now >= *end)
                fail("lease: still leading (no revoked) at or after the lease end", now);
        }
    }
    void at_end(tp now) {
        if (leading || elected != revoked)
            fail("pairing: stop() left " + std::to_string(elected) + " elected / " +
                     std::to_string(revoked) + " revoked",
                 now);
    }
};

// What the runs went through, summed: the schedules must reach every situation the invariants
// are about, or a check could pass by never being exercised.
struct coverage {
    std::map<std::string, std::size_t> seen;
    void count(const std::vector<elector_event>& ev, std::uint64_t& last_elected) {
        for (const auto& x : ev) {
            if (x.what == elector_event::kind::elected) {
                ++seen[x.epoch == last_elected ? "elected again under the same epoch" : "elected"];
                last_elected = x.epoch;
            } else if (x.what == elector_event::kind::revoked) {
                ++seen["revoked " + std::string(to_string(x.reason))];
            } else {
                ++seen[x.identity ? "leader_changed to a holder" : "leader_changed to none"];
            }
        }
    }
};

struct pending_round {
    enum class fate {
        answered,
        lost_before_server,
        lost_after_server,
        unacknowledged
    };
    tp started, sent, apply_at, reply_at;
    fate what = fate::answered;
    bool applied = false;
    std::uint64_t leadership = 0;  // the server's, right after the round ran there
    detail::round_reply reply;
};

// One seeded schedule; returns the first invariant failure, or "" when all held.
std::string run_schedule(std::uint64_t seed, mutation m, coverage* cov = nullptr, int steps = 250) {
    std::mt19937_64 rng(seed);
    auto pick = [&](std::uint64_t n) { return rng() % n; };
    auto span = [&](std::chrono::milliseconds most) {
        return ns(pick(static_cast<std::uint64_t>(ns(most).count()) + 1));
    };
    const std::chrono::milliseconds drift{std::vector<int>{0, 5, 20}[pick(3)]};
    const std::size_t replicas = pick(2);

    engine_under_test e(m);
    model_server s;
    checker c;
    std::optional<pending_round> p;
    tp now = tp(std::chrono::hours(1));
    bool started = true;
    e.start(now);

    std::uint64_t last_elected = 0;
    auto drain = [&](bool timed, std::optional<std::uint64_t> leadership = std::nullopt) {
        const auto ev = e.take_events();
        if (cov) cov->count(ev, last_elected);
        c.on_events(ev, e, s, now, leadership.value_or(s.leadership));
        c.observe(e, s, now, timed);
    };
    auto advance_to = [&](tp t) {
        if (t < now) t = now;
        if (p && !p->applied && p->apply_at <= t) {
            p->applied = true;
            if (p->what != pending_round::fate::lost_before_server)
                p->reply = s.campaign(p->apply_at, pick(3));
            p->leadership = s.leadership;
        }
        now = t;
    };
    auto finish_round = [&] {
        advance_to(std::max(now, p->reply_at));
        std::optional<campaign_result> r;
        if (p->what == pending_round::fate::answered ||
            p->what == pending_round::fate::unacknowledged) {
            const int acks =
                replicas == 0 ? -1 : (p->what == pending_round::fate::unacknowledged ? 0 : 1);
            r = detail::judge_round(p->reply, p->sent, now, acks, term, drift, replicas);
            // The model's own view of a confirmed renewal, written independently of the engine.
            const auto end = p->sent + term - drift;
            if (p->reply.holder_is_us && now < end && (replicas == 0 || acks >= 1)) {
                auto& known = c.confirmed[p->reply.epoch];
                if (known < end) known = end;
            }
        }
        e.round_done(now, p->started, r);
        const auto leadership = p->leadership;
        p.reset();
        drain(true, leadership);
    };
    auto run_resign_script = [&] {
        const auto k = pick(10);
        if (k < 8) {
            const bool deleted = s.resign(now);
            e.resign_done(deleted);
            drain(false);
            if (deleted && pick(2)) e.handoff("me");  // it hears its own signal too
        } else {
            if (k == 9) (void)s.resign(now);  // ran, but the reply was lost
            e.resign_failed();
        }
        drain(false);
    };

    for (int step = 0; step < steps && c.failure.empty(); ++step) {
        const auto a = pick(100);
        if (a < 30) {
            // The driver's timer: exactly at the due time, 1 ns before it, or late.
            const auto due = e.next_due();
            tp t = now + span(term / 2);
            if (due) {
                const auto k = pick(4);
                t = k < 2 ? *due : k == 2 ? *due - ns(1) : *due + span(20ms);
            }
            advance_to(t);
            if (p) {
                e.expire(now);  // the deadline timer runs while the round is out
            } else if (e.poll(now) == elector_command::campaign) {
                pending_round r;
                r.started = now;
                r.sent = now + span(1ms);
                r.apply_at = r.sent + span(pick(5) == 0 ? term : 20ms);
                r.reply_at = r.apply_at + span(pick(5) == 0 ? term : 20ms);
                const auto f = pick(10);
                r.what = f < 7    ? pending_round::fate::answered
                         : f == 7 ? pending_round::fate::lost_before_server
                         : f == 8 ? pending_round::fate::lost_after_server
                                  : pending_round::fate::unacknowledged;
                if (r.what == pending_round::fate::unacknowledged && replicas == 0)
                    r.what = pending_round::fate::answered;
                p = r;
            }
            drain(true);
        } else if (a < 50) {
            if (p) finish_round();
        } else if (a < 70) {
            // Another candidate runs its own round, or resigns.
            advance_to(now + span(term / 3));
            const std::string other = pick(2) ? "o1" : "o2";
            s.settle(now);
            if (pick(20) == 0) {
                s.lose();  // the server lost the selector: the next round finds it gone or taken
            } else if (!s.holder) {
                s.take(other, now, pick(3));
            } else if (*s.holder == other) {
                if (pick(4) == 0) {
                    s.holder.reset();
                    if (pick(5) != 0) e.handoff(other);  // or the signal is lost
                } else {
                    s.expiry = now + term;
                }
            }
            drain(false);
        } else if (a < 80) {
            // resign(): the driver serialises it with rounds; now and then the engine's own
            // guard against a round still out is exercised too.
            if (p && pick(4) != 0) continue;
            advance_to(now + span(10ms));
            (void)e.resign(now);
            drain(true);
            run_resign_script();
        } else if (a < 86) {
            advance_to(now + span(10ms));
            if (!started) {
                e.start(now);
                started = true;
                drain(true);
                continue;
            }
            if (p && pick(4) != 0) finish_round();  // stop() waits for the round in flight
            e.halt();
            const auto cmd = e.stop(now);
            drain(true);
            if (cmd == elector_command::resign) run_resign_script();
            started = false;
        } else {
            // A user asks is_leader() at some instant, often right at the lease's edge.
            const auto end = e.lease_end();
            advance_to(end && pick(2) ? *end - ns(pick(2)) : now + span(term / 4));
            c.observe(e, s, now, false);
        }
    }
    if (c.failure.empty()) {
        if (p) finish_round();
        e.halt();
        const auto cmd = e.stop(now);
        drain(true);
        if (cmd == elector_command::resign) run_resign_script();
        c.at_end(now);
    }
    return c.failure;
}

std::optional<std::uint64_t> seed_from_env() {
    if (const char* s = std::getenv("ELECTOR_SEED")) return std::strtoull(s, nullptr, 10);
    return std::nullopt;
}

constexpr std::uint64_t first_seed = 20261123;

}  // namespace

TEST(ElectorSchedule, InvariantsHoldOverThousandsOfSeededRuns) {
    std::vector<std::uint64_t> seeds;
    if (auto one = seed_from_env())
        seeds.push_back(*one);
    else
        for (std::uint64_t i = 0; i < 4000; ++i) seeds.push_back(first_seed + i);
    coverage cov;
    for (const auto seed : seeds) {
        SCOPED_TRACE("seed " + std::to_string(seed) +
                     " (rerun with ELECTOR_SEED=" + std::to_string(seed) + ")");
        const auto failure = run_schedule(seed, mutation::none, &cov);
        ASSERT_EQ(failure, "");
    }
    for (const auto& [what, n] : cov.seen) std::cout << "[schedule] " << what << ": " << n << "\n";
    if (seeds.size() == 1) return;
    for (const char* what : {"elected", "elected again under the same epoch", "revoked lost",
                             "revoked expired", "revoked connection", "revoked resigned",
                             "leader_changed to a holder", "leader_changed to none"})
        EXPECT_GT(cov.seen[what], 0u) << what;
}

// The schedules reach the situations the invariants are about; a check that never sees them
// could not fail.
TEST(ElectorSchedule, BrokenEnginesAreCaught) {
    const std::pair<mutation, std::string> cases[] = {
        {mutation::drop_revoked, "pairing:"},
        {mutation::repeat_leader_changed, "leader_changed:"},
        {mutation::expire_one_tick_late, "lease:"},
        {mutation::keep_first_epoch, "epoch:"},
    };
    for (const auto& [m, tag] : cases) {
        SCOPED_TRACE("expected a failure starting with " + tag);
        std::optional<std::uint64_t> caught;
        std::string failure;
        for (std::uint64_t i = 0; i < 400 && !caught; ++i) {
            failure = run_schedule(first_seed + i, m);
            if (failure.rfind(tag, 0) == 0) caught = first_seed + i;
        }
        ASSERT_TRUE(caught) << "last failure: " << failure;
        std::cout << "[schedule] " << tag << " caught at seed " << *caught << ": " << failure
                  << "\n";
    }
}

// A single schedule is reproducible: the same seed gives the same history.
TEST(ElectorSchedule, SameSeedSameOutcome) {
    EXPECT_EQ(run_schedule(first_seed + 7, mutation::keep_first_epoch),
              run_schedule(first_seed + 7, mutation::keep_first_epoch));
    EXPECT_EQ(run_schedule(first_seed + 7, mutation::none), "");
}

}  // namespace elector_schedule_test
