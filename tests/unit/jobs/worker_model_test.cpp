// worker_engine in a simulated world: a worker of several threads driven as job_worker drives
// it (claims, a watch timer, an upkeep thread that blocks on each heartbeat's round trip),
// against a model of the claim and heartbeat scripts (the server's lease ends, reclaims when
// they pass, timeouts), on a virtual clock with seeded random delays, slow and lost requests.
//
// Checked:
// - safety: whenever the server's lease of a job this worker still holds ends (another
//   worker may take it back and run it), the job's stop token has already fired; and a job
//   with a timeout is told to stop by its deadline;
// - liveness: on a quick network with no failures, no job is ever stopped for a lapsed or
//   lost lease (the heartbeats come in time).
// Each check is shown to fail with a deliberately broken driver or engine setting (below).
#include "worker_engine.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redcoord::detail;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using time_point = worker_clock::time_point;

namespace {

const time_point t0 = time_point{} + std::chrono::hours(1);

enum class flaw {
    none,
    renewal_at_reply,  // the driver tells the engine a heartbeat was sent when it was answered
    claim_at_reply,    // the same for a claim
    slow_beats,        // heartbeats once a lease instead of every third of one
};

struct world_params {
    std::uint32_t seed = 1;
    bool quick = false;  // sub-millisecond round trips, nothing slow or lost
    flaw broken = flaw::none;
};

struct totals {
    int safety = 0;    // a server lease ended on a held job whose stop had not fired
    int deadline = 0;  // a job past its deadline whose stop had not fired
    int lapses = 0;    // stops for lapsed or lost leases
    int jobs = 0;      // jobs claimed
    int stops = 0;     // stop decisions of any kind
};

class world {
public:
    explicit world(world_params p) : p_(p), rng_(p.seed) {
        worker_settings s;
        const milliseconds leases[] = {30ms, 90ms, 300ms};
        s.lease = leases[pick(0, 2)];
        s.timeout_margin = milliseconds(pick(2, 20));
        s.settle_delay = 2ms;
        s.prefetch = 1;
        if (p_.broken == flaw::slow_beats) s.beat_period = s.lease;
        lease_ = s.lease;
        engine_.emplace(s, t0);
        threads_ = static_cast<int>(pick(1, 4));
    }

    totals run(milliseconds span) {
        for (int t = 0; t < threads_; ++t)
            at(t0 + microseconds(pick(0, 1000)), [this] { claim(); });
        arm_watch(engine_->watch_next());
        at(engine_->upkeep_due(), [this] { upkeep(); });
        const auto end = t0 + span;
        while (!events_.empty() && events_.top().when <= end) {
            auto e = events_.top();
            events_.pop();
            now_ = e.when;
            e.run();
        }
        return t_;
    }

private:
    struct event {
        time_point when;
        std::uint64_t seq;
        std::function<void()> run;
        bool operator>(const event& o) const {
            return when != o.when ? when > o.when : seq > o.seq;
        }
    };
    struct server_job {
        std::string token;                    // the holder's claim token ("" once taken back)
        time_point lease_end;                 // ZSCORE in `:active`
        time_point ends = time_point::max();  // the timeout's end
    };

    std::uint64_t pick(std::uint64_t lo, std::uint64_t hi) {
        return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng_);
    }
    bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
    // One way of a round trip.
    microseconds delay() {
        if (p_.quick) return microseconds(pick(20, 400));
        if (chance(0.15))
            return microseconds(pick(0, static_cast<std::uint64_t>(lease_.count()) * 1000));
        return microseconds(pick(20, 2000));
    }
    void at(time_point when, std::function<void()> f) {
        events_.push({std::max(when, now_), seq_++, std::move(f)});
    }

    // The server sets a job's lease; when it ends unrenewed, the job is taken back.
    void server_lease(const std::string& id, time_point end) {
        auto& j = server_[id];
        j.lease_end = std::min(end, j.ends);
        const auto token = j.token;
        at(j.lease_end, [this, id, token, end = j.lease_end] {
            auto& s = server_[id];
            if (s.token != token || s.lease_end != end) return;  // renewed or settled meanwhile
            s.token.clear();  // another worker may run it from now on
            if (engine_->holds(id, token) && !engine_->stop_requested(id, token)) ++t_.safety;
        });
    }

    void claim() {
        const auto sent = now_;
        const auto id = "j" + std::to_string(next_id_++);
        const auto token = "k" + std::to_string(next_id_);
        claimed_job_reply c;
        c.id = id;
        if (chance(0.3))
            c.timeout = milliseconds(pick(1, 3) * static_cast<std::uint64_t>(lease_.count()) / 2);
        const auto d1 = delay(), d2 = delay();
        at(sent + d1, [this, c, token, sent, d2] {
            auto& j = server_[c.id];
            j.token = token;
            if (c.timeout.count() > 0) j.ends = now_ + c.timeout;
            server_lease(c.id, now_ + lease_);
            at(now_ + d2, [this, c, token, sent] { claimed(c, token, sent); });
        });
    }

    void claimed(const claimed_job_reply& c, const std::string& token, time_point sent) {
        ++t_.jobs;
        const auto told = p_.broken == flaw::claim_at_reply ? now_ : sent;
        if (const auto rearm = engine_->on_claimed({c}, token, told)) arm_watch(*rearm);
        if (c.timeout.count() > 0)
            at(sent + c.timeout, [this, id = c.id, token] {
                if (engine_->holds(id, token) && !engine_->stop_requested(id, token)) ++t_.deadline;
            });
        const auto run_for =
            microseconds(pick(0, 3 * static_cast<std::uint64_t>(lease_.count()) * 1000));
        poll_handler(c.id, token, now_ + run_for);
    }

    // The handler runs until `done` or, once its stop token fires, for a moment more; then
    // its settlement is sent (the job forgotten) and the thread claims again.
    void poll_handler(const std::string& id, const std::string& token, time_point done) {
        const auto step = now_ + 1ms;
        if (engine_->stop_requested(id, token) || step >= done) {
            at(std::min(step, done), [this, id, token] {
                engine_->forget(id, token);
                auto& s = server_[id];
                if (s.token == token) s.token.clear();  // settled
                at(now_ + delay(), [this] { claim(); });
            });
            return;
        }
        at(step, [this, id, token, done] { poll_handler(id, token, done); });
    }

    void arm_watch(time_point when) {
        const auto gen = ++watch_gen_;
        at(when, [this, gen] {
            if (gen != watch_gen_) return;  // re-armed since
            auto w = engine_->watch(now_);
            count(w.stopped);
            arm_watch(w.next);
        });
    }

    void count(const std::vector<stop_decision>& stops) {
        t_.stops += static_cast<int>(stops.size());
        for (const auto& s : stops)
            if (s.why == stop_reason::lease_lapsed || s.why == stop_reason::lost) ++t_.lapses;
    }

    // The upkeep thread: it waits for each heartbeat's answer (or failure) before the next.
    void upkeep() {
        auto req = engine_->beat(now_);
        if (engine_->flush_at() && *engine_->flush_at() <= now_) engine_->flushed();
        if (!req || req->jobs.empty()) {
            at(engine_->upkeep_due(), [this] { upkeep(); });
            return;
        }
        const auto sent = now_;
        const auto d1 = delay(), d2 = delay();
        const bool lost_request = !p_.quick && chance(0.05);
        const bool lost_reply = !p_.quick && chance(0.05);
        at(sent + d1, [this, r = *req, sent, d2, lost_request, lost_reply] {
            std::vector<beat_status> answers;
            if (!lost_request)
                for (const auto& [id, token] : r.jobs) {
                    auto& s = server_[id];
                    if (s.token != token || s.lease_end <= now_) {
                        answers.push_back(beat_status::lost);
                        continue;
                    }
                    server_lease(id, now_ + lease_);
                    answers.push_back(beat_status::held);
                }
            at(now_ + d2, [this, r, sent, answers, lost_request, lost_reply] {
                if (!lost_request && !lost_reply) {
                    const auto told = p_.broken == flaw::renewal_at_reply ? now_ : sent;
                    count(engine_->on_beat_reply(r, answers, told, now_));
                }
                at(engine_->upkeep_due(), [this] { upkeep(); });
            });
        });
    }

    world_params p_;
    std::mt19937_64 rng_;
    std::optional<worker_engine> engine_;
    milliseconds lease_{};
    int threads_ = 1;
    time_point now_ = t0;
    std::uint64_t seq_ = 0, watch_gen_ = 0;
    int next_id_ = 0;
    std::priority_queue<event, std::vector<event>, std::greater<>> events_;
    std::map<std::string, server_job> server_;
    totals t_;
};

totals run_many(flaw broken, bool quick, std::uint32_t runs, bool stop_at_first = false) {
    totals sum;
    for (std::uint32_t seed = 1; seed <= runs; ++seed) {
        world w({seed, quick, broken});
        const auto t = w.run(3000ms);
        sum.safety += t.safety;
        sum.deadline += t.deadline;
        sum.lapses += t.lapses;
        sum.jobs += t.jobs;
        sum.stops += t.stops;
        // A slow network stops jobs for lapsed leases by design: only a quick one's count.
        const bool caught = sum.safety > 0 || sum.deadline > 0 || (quick && sum.lapses > 0);
        if (stop_at_first && caught) break;
    }
    return sum;
}

}  // namespace

TEST(WorkerModel, AJobIsToldToStopBeforeItsServerLeaseEndsWhateverTheNetworkDoes) {
    const auto t = run_many(flaw::none, false, 300);
    EXPECT_EQ(t.safety, 0);
    EXPECT_EQ(t.deadline, 0);
    EXPECT_GT(t.jobs, 3000);  // the schedules did run
    EXPECT_GT(t.lapses, 0);   // and slow or lost heartbeats did stop jobs
}

TEST(WorkerModel, OnAQuickNetworkNoLeaseEverLapses) {
    const auto t = run_many(flaw::none, true, 100);
    EXPECT_EQ(t.lapses, 0);
    EXPECT_EQ(t.safety, 0);
    EXPECT_EQ(t.deadline, 0);
    EXPECT_GT(t.stops, 0);  // timeouts still stop their jobs
}

// The checks can fail: each broken variant is caught within the same seeded schedules.
TEST(WorkerModel, BrokenDriverRecordingRenewalsAtTheirReplyIsCaught) {
    EXPECT_GT(run_many(flaw::renewal_at_reply, false, 300, true).safety, 0);
}

TEST(WorkerModel, BrokenDriverTimingClaimsFromTheirReplyIsCaught) {
    EXPECT_GT(run_many(flaw::claim_at_reply, false, 300, true).safety, 0);
}

TEST(WorkerModel, BrokenEngineBeatingOnceALeaseIsCaught) {
    EXPECT_GT(run_many(flaw::slow_beats, true, 100, true).lapses, 0);
}
