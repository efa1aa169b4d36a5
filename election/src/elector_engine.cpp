#include "elector_engine.hpp"

#include "round.hpp"

#include <algorithm>
#include <utility>

namespace redcoord::detail {

elector_engine::elector_engine(std::string identity, std::chrono::milliseconds retry_period)
    : identity_(std::move(identity)), retry_(retry_period) {}

void elector_engine::start(time_point now) {
    running_ = true;
    hold_until_ = {};
    next_round_ = now;
}

void elector_engine::halt() { running_ = false; }

elector_command elector_engine::stop(time_point now) {
    running_ = false;
    expire(now);
    // A round still out may have (re)taken the selector: resign to be sure, and do not let its
    // late result elect a candidate that has stopped.
    const bool holding = leader_ || known_holder_ == identity_ || in_flight_;
    if (in_flight_) ignore_in_flight_ = true;
    if (leader_) step_down(revoke_reason::resigned);
    if (!holding) return elector_command::none;
    resigning_ = true;
    return elector_command::resign;
}

void elector_engine::expire(time_point now) {
    // A step-down that fell due while a round was out, or after a failed one, is the
    // connection's fault; with the server answering it is a plain expiry.
    if (leader_ && lease_over(deadline_, now))
        step_down(last_round_failed_ || in_flight_ ? revoke_reason::connection
                                                   : revoke_reason::expired);
}

elector_command elector_engine::poll(time_point now) {
    expire(now);
    if (in_flight_ || held_back(now)) return elector_command::none;
    if (now < next_round_ && !(handoff_ && !leader_)) return elector_command::none;
    handoff_ = false;
    in_flight_ = true;
    return elector_command::campaign;
}

void elector_engine::round_done(time_point now, time_point started,
                                const std::optional<campaign_result>& r) {
    if (!in_flight_) return;  // not a round this engine started
    if (ignore_in_flight_) {
        // stop() or resign() gave the leadership up while this round was out.
        ignore_in_flight_ = false;
        in_flight_ = false;
        ++rounds_;
        next_round_ = (r ? r->sent_at : started) + retry_;
        return;
    }
    expire(now);  // labelled with the round still in flight
    ++rounds_;
    in_flight_ = false;
    last_round_failed_ = !r;
    if (r) apply(*r);
    // No reply: the server may be failing over; asking again sooner finds the promoted master
    // within a quarter period (a refused connect costs little, and a slow one is bounded by
    // the round's own reply timeout).
    next_round_ = r ? r->sent_at + retry_ : started + retry_ / 4;
}

void elector_engine::handoff(std::string_view resigned_identity) {
    if (known_holder_ && *known_holder_ == resigned_identity) observe_holder(std::nullopt);
    // Another leader resigned: our own post-resign hold no longer has a purpose.
    if (resigned_identity != identity_) hold_until_ = {};
    handoff_ = true;
}

void elector_engine::resubscribed() {
    // Whoever resigned meanwhile went unheard: check now rather than at the next round. A
    // leader has nothing to learn, and a resigner's hold still runs (next_round_due()).
    handoff_ = true;
}

elector_command elector_engine::resign(time_point now) {
    expire(now);
    // Two periods, not one: a follower whose round went out just before this resign is due
    // again one period later, and under load its timer may fire late while its handoff
    // notice is lost (its channel not yet confirmed). Were the resigner to campaign first, it
    // would win its own selector back and renew it, and the hand-over would never happen.
    hold_until_ = now + 2 * retry_;
    if (in_flight_) ignore_in_flight_ = true;
    if (leader_) step_down(revoke_reason::resigned);
    resigning_ = true;
    return elector_command::resign;
}

void elector_engine::resign_done(bool deleted) {
    resigning_ = false;
    if (deleted) observe_holder(std::nullopt);
}

void elector_engine::resign_failed() { resigning_ = false; }

std::vector<elector_event> elector_engine::take_events() { return std::exchange(events_, {}); }

std::optional<elector_engine::time_point> elector_engine::next_round_due() const {
    if (!running_ || in_flight_) return std::nullopt;
    const time_point due = handoff_ && !leader_ ? time_point{} : next_round_;
    return std::max(due, hold_until_);
}

std::optional<elector_engine::time_point> elector_engine::lease_end() const {
    if (!leader_) return std::nullopt;
    return deadline_;
}

std::optional<elector_engine::time_point> elector_engine::next_due() const {
    const auto round = next_round_due();
    const auto lease = lease_end();
    if (round && lease) return std::min(*round, *lease);
    return round ? round : lease;
}

std::optional<elector_engine::time_point> elector_engine::deadline(time_point now) const {
    if (is_leader(now)) return deadline_;
    return std::nullopt;
}

elector_phase elector_engine::phase(time_point now) const {
    if (resigning_) return elector_phase::resigning;
    if (!running_) return elector_phase::stopped;
    if (is_leader(now)) return elector_phase::leading;
    if (now < hold_until_) return elector_phase::resigning;
    return elector_phase::campaigning;
}

void elector_engine::observe_holder(const std::optional<std::string>& h) {
    if (h == known_holder_) return;
    known_holder_ = h;
    events_.push_back({elector_event::kind::leader_changed, 0, {}, h});
}

void elector_engine::become_leader(const campaign_result& r) {
    leader_ = true;
    epoch_ = r.epoch;
    deadline_ = r.deadline;
    events_.push_back({elector_event::kind::elected, r.epoch, {}, {}});
}

void elector_engine::step_down(revoke_reason why) {
    leader_ = false;
    events_.push_back({elector_event::kind::revoked, 0, why, {}});
}

void elector_engine::apply(const campaign_result& r) {
    observe_holder(r.holder);
    if (r.leader) {
        if (leader_ && epoch_ == r.epoch) {
            deadline_ = std::max(deadline_, r.deadline);
            return;
        }
        if (leader_) step_down(revoke_reason::lost);  // a new epoch replaced ours
        become_leader(r);
        return;
    }
    // Our own unconfirmed renewal (late reply, missing replica acks) keeps the old lease end.
    if (leader_ && !(r.holder_is_us && r.epoch == epoch_)) step_down(revoke_reason::lost);
}

}  // namespace redcoord::detail
