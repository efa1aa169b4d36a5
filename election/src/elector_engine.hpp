#pragma once
// The leader_elector's decisions, sans I/O: a plain state machine fed with "now", round
// results, handoff signals, resign and stop requests. It says when the next round is due, which
// command to send (a campaign round, a resign), and which callbacks to deliver, in order. It
// owns no thread, socket, mutex or clock; leader_elector.cpp is the driver that does the I/O,
// holds the lock around every call and delivers the events.

#include <redcoord/election/campaign_result.hpp>
#include <redcoord/election/revoke_reason.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord::detail {

/// One callback to deliver, in the order of the transitions that produced it.
struct elector_event {
    enum class kind {
        elected,
        revoked,
        leader_changed
    };
    kind what = kind::leader_changed;
    std::uint64_t epoch = 0;              ///< elected: the leadership's epoch.
    revoke_reason reason{};               ///< revoked: why the leadership ended.
    std::optional<std::string> identity;  ///< leader_changed: the new observed holder.
};

/// What the driver must send now.
enum class elector_command {
    none,      ///< Nothing: wait until next_due().
    campaign,  ///< Run one campaign round, then report it with round_done().
    resign,    ///< Run the resign script, then report it with resign_done() (or resign_failed()).
};

/// Where the elector stands (for tests and diagnostics; the driver needs only the outputs).
enum class elector_phase {
    stopped,      ///< Not started, or stopped: no rounds.
    campaigning,  ///< Running rounds as a follower (or a leader whose lease ran out).
    leading,      ///< Leading, and the lease has not ended.
    resigning,    ///< Gave leadership up: the resign is under way or the post-resign hold runs.
};

class elector_engine {
public:
    using time_point = std::chrono::steady_clock::time_point;

    /// `retry_period`: the pause between rounds (a quarter of it after a round without a
    /// reply), and the hold after a resign.
    elector_engine(std::string identity, std::chrono::milliseconds retry_period);

    // --- inputs ---

    /// Starts campaigning: the first round is due at once; a hold from an earlier resign ends.
    void start(time_point now);
    /// Stops starting rounds. A round already in flight is still reported (round_done) and
    /// applied, so a leadership it wins is known and resigned by stop().
    void halt();
    /// Ends the election for this candidate once no round is in flight: a leader steps down
    /// (`resigned`), and `resign` is returned when the selector may still be ours on the
    /// server. A round still in flight counts as possibly holding; its late result is ignored.
    [[nodiscard]] elector_command stop(time_point now);
    /// Ends a leadership whose lease is over at `now` (revoked `expired`, or `connection` when
    /// the last round failed or is still unanswered).
    void expire(time_point now);
    /// Expires as above, then returns `campaign` when a round is due (and marks it in flight).
    [[nodiscard]] elector_command poll(time_point now);
    /// The round started by poll() ended at `now`: `r` is its result, nullopt when it failed
    /// (transport or server error). `started` is when poll() returned `campaign`.
    void round_done(time_point now, time_point started, const std::optional<campaign_result>& r);
    /// A handoff signal arrived: `resigned_identity` gave up leadership.
    void handoff(std::string_view resigned_identity);
    /// The handoff channel was (re)subscribed: a notice sent while it was not may be lost.
    void resubscribed();
    /// resign(): steps down at once (`resigned` when leading), holds back from campaigning for
    /// two retry periods (or until another candidate's handoff signal) and returns `resign`.
    [[nodiscard]] elector_command resign(time_point now);
    /// The resign script ran: `deleted` when the selector was ours and is gone.
    void resign_done(bool deleted);
    /// The resign script failed (transport): the selector may still be ours.
    void resign_failed();

    // --- outputs ---

    /// The callbacks produced since the last call, oldest first.
    [[nodiscard]] std::vector<elector_event> take_events();
    /// When poll() should run next: the next round (after any hold), or the lease end when
    /// leading, whichever comes first; nullopt when neither can come (stopped, round in flight
    /// and not leading).
    [[nodiscard]] std::optional<time_point> next_due() const;
    /// When the next round is due (a hold included); nullopt when stopped or a round is in flight.
    [[nodiscard]] std::optional<time_point> next_round_due() const;
    /// The lease end of the current leadership; nullopt when not leading.
    [[nodiscard]] std::optional<time_point> lease_end() const;

    // --- queries ---

    [[nodiscard]] bool is_leader(time_point now) const noexcept {
        return leader_ && now < deadline_;
    }
    [[nodiscard]] std::uint64_t epoch(time_point now) const noexcept {
        return is_leader(now) ? epoch_ : 0;
    }
    [[nodiscard]] std::optional<time_point> deadline(time_point now) const;
    [[nodiscard]] const std::optional<std::string>& known_holder() const noexcept {
        return known_holder_;
    }
    [[nodiscard]] std::uint64_t rounds() const noexcept { return rounds_; }
    [[nodiscard]] bool running() const noexcept { return running_; }
    [[nodiscard]] bool in_flight() const noexcept { return in_flight_; }
    [[nodiscard]] elector_phase phase(time_point now) const;
    [[nodiscard]] const std::string& identity() const noexcept { return identity_; }

private:
    void observe_holder(const std::optional<std::string>& h);
    void become_leader(const campaign_result& r);
    void step_down(revoke_reason why);
    void apply(const campaign_result& r);
    [[nodiscard]] bool held_back(time_point now) const { return !running_ || now < hold_until_; }

    std::string identity_;
    std::chrono::milliseconds retry_;

    bool running_ = false;
    bool in_flight_ = false;         // a round was started and has not been reported yet
    bool ignore_in_flight_ = false;  // stop() ran while it was out: its result comes too late
    bool last_round_failed_ = false;
    bool handoff_ = false;    // a handoff signal since the last round started
    bool resigning_ = false;  // between resign()/stop() and resign_done()/resign_failed()
    bool leader_ = false;
    std::uint64_t epoch_ = 0;
    time_point deadline_{};
    time_point next_round_{};
    time_point hold_until_{};
    std::optional<std::string> known_holder_;
    std::uint64_t rounds_ = 0;
    std::vector<elector_event> events_;
};

}  // namespace redcoord::detail
