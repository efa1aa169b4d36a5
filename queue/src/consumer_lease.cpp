#include "consumer_lease.hpp"

#include "seconds_arg.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/lease_schedule.hpp>

#include <algorithm>

namespace redcoord::detail {

using std::chrono::milliseconds;

consumer_lease::consumer_lease(lease_timing timing, std::string first_id,
                               std::function<std::string()> fresh_id)
    : timing_(timing), fresh_id_(std::move(fresh_id)) {
    ids_.push_back({next_ref_++, std::move(first_id), {}, 0});
}

consumer_lease::identity* consumer_lease::find(ref who) {
    for (auto& i : ids_)
        if (i.who == who) return &i;
    return nullptr;
}

const consumer_lease::identity* consumer_lease::find(ref who) const {
    for (const auto& i : ids_)
        if (i.who == who) return &i;
    return nullptr;
}

consumer_lease::identity_view consumer_lease::current() const {
    const auto& c = current_identity();
    return {c.who, c.id};
}

consumer_lease::identity_view consumer_lease::starting() const { return current(); }

void consumer_lease::started(time_point now) {
    running_ = true;
    next_heartbeat_ = now + timing_.heartbeat_interval;
    next_recover_ = now + timing_.recover_interval;
}

std::vector<consumer_lease::identity_view> consumer_lease::close() {
    running_ = false;
    std::vector<identity_view> all;
    for (const auto& i : ids_) all.push_back({i.who, i.id});
    // The release script deletes every heartbeat key: no lease is known any more.
    ids_.erase(ids_.begin(), ids_.end() - 1);
    current_identity().lease_until = {};
    current_identity().outstanding = 0;
    return all;
}

bool consumer_lease::renewed(ref who, time_point sent, std::optional<bool> intact) {
    auto* i = find(who);
    if (i == nullptr) return false;
    // The server set the expiry when the renewal arrived, after `sent`.
    const bool lost = intact == false && i->lease_until > sent;
    if (lost) distrust_ = true;
    // No drift is taken off here: every use of the bound keeps margin() (a quarter of the
    // visibility timeout) clear of it, which covers a clock's drift many times over.
    i->lease_until = std::max(
        i->lease_until,
        lease_schedule(timing_.visibility_timeout, std::chrono::microseconds(0)).valid_until(sent));
    return lost;
}

consumer_lease::time_point consumer_lease::lease_until(ref who) const {
    const auto* i = find(who);
    return i ? i->lease_until : time_point{};
}

consumer_lease::upkeep consumer_lease::tick(time_point now) {
    upkeep u;
    if (!running_) return u;
    // A retired identity with nothing outstanding is only waiting for its lease to run out
    // and recovery to return what lost replies left in its list; after two leases nothing
    // of it is left to renew or settle.
    const ref cur = current_identity().who;
    std::erase_if(ids_, [&](const identity& i) {
        return i.who != cur && i.outstanding == 0 &&
               i.lease_until + 2 * timing_.visibility_timeout < now;
    });
    if (now >= next_heartbeat_) {
        next_heartbeat_ = now + timing_.heartbeat_interval;
        const auto& c = current_identity();
        u.renew.push_back({c.who, c.id});
        for (auto it = ids_.begin(); it + 1 < ids_.end(); ++it)
            if (it->outstanding > 0) u.renew.push_back({it->who, it->id});
    }
    if (timing_.recover_interval > milliseconds(0) && now >= next_recover_) {
        next_recover_ = now + timing_.recover_interval;
        u.recover = true;
    }
    return u;
}

std::optional<consumer_lease::time_point> consumer_lease::next_due() const {
    if (!running_) return std::nullopt;
    if (timing_.recover_interval > milliseconds(0)) return std::min(next_heartbeat_, next_recover_);
    return next_heartbeat_;
}

consumer_lease::pop_ticket consumer_lease::begin_pop(time_point now, milliseconds timeout) {
    auto& c = current_identity();
    ++c.outstanding;
    // Saturating: pop(milliseconds::max()) waits until a message comes.
    return {c.who, c.id, deadline_after(timeout, now), true};
}

move_plan consumer_lease::plan_move(pop_ticket& t, time_point now, bool stop_requested,
                                    milliseconds command_timeout) const {
    const bool first = t.first;
    t.first = false;
    if (!first && stop_requested) return {};
    const auto left = t.deadline > now ? std::chrono::duration_cast<milliseconds>(t.deadline - now)
                                       : milliseconds(0);
    if (!first && left < milliseconds(1)) return {};
    // Each block is shorter than half a lease and than the reply deadline of a pipeline.
    auto cap = timing_.visibility_timeout / 2;
    if (command_timeout > milliseconds(0))
        cap = std::min(cap, std::max(command_timeout / 2, milliseconds(1)));
    // Only a zero timeout takes the non-blocking path: BLMOVE on a non-empty list answers at
    // once, so a non-empty queue costs one command either way.
    move_plan p;
    p.block = left < milliseconds(1) ? milliseconds(0) : std::min(left, cap);
    p.reply_deadline =
        p.block > milliseconds(0) ? blocking_deadline(p.block, command_timeout) : command_timeout;
    const auto* i = find(t.who);
    const auto lease = i ? i->lease_until : time_point{};
    // The lease outlives this command by `margin` even if it blocks fully, so the move lands
    // while the consumer is registered: a plain command, as cheap as raw Redis.
    p.kind = !distrust_ && lease - now > p.block + margin() ? move_kind::plain
                                                            : move_kind::renew_then_move;
    return p;
}

bool consumer_lease::moved(const pop_ticket& t, move_kind kind, time_point sent, time_point now,
                           bool renewal_ok, bool moved) {
    if (kind == move_kind::plain) {
        // Stalled past the bound (e.g. the process was stopped)? Re-register at once, so a
        // message moved after a lapse is reclaimable if the consumer dies now.
        return moved && now + margin() > lease_until(t.who);
    }
    if (renewal_ok) {
        renewed(t.who, sent);
        return false;
    }
    // The move ran whatever became of the renewal: never drop the message, register.
    return moved;
}

void consumer_lease::release(ref who) {
    if (auto* i = find(who); i && i->outstanding > 0) --i->outstanding;
}

void consumer_lease::end_pop(const pop_ticket& t, pop_end how) {
    if (how == pop_end::delivered) return;  // outstanding until acked or nacked
    release(t.who);
    // A move may have happened without its reply: no handler holds it, so the retired
    // lease must run out for recovery to return it.
    if (how == pop_end::transport_error) retire(t.who);
}

consumer_lease::settle_ticket consumer_lease::begin_settle(const std::string& consumer,
                                                           time_point now) const {
    settle_ticket t;
    for (const auto& i : ids_)
        if (i.id == consumer) t.owner = i.who;
    t.give_up = deadline_after(timing_.visibility_timeout, now);
    t.backoff = first_settle_backoff;
    return t;
}

settle_step consumer_lease::settle(settle_ticket& t, settle_attempt what, time_point now) {
    auto finish = [&](settle_verdict v) {
        if (t.owner) {
            release(*t.owner);
            if (v != settle_verdict::done) retire(*t.owner);
        }
        return settle_step{v, milliseconds(0)};
    };
    switch (what) {
        case settle_attempt::replied: return finish(settle_verdict::done);
        case settle_attempt::reply_lost:
            // Whether it was removed is unknown. If it is still there, the retired identity's
            // lease runs out and recovery returns it.
            return finish(settle_verdict::outcome_unknown);
        case settle_attempt::refused: break;
    }
    // Refused or not sent: retry while the lease surely holds, so the message neither waits
    // in a live list nor is delivered twice. Without a lease known here (popped
    // elsewhere) nothing bounds the wait: the caller decides.
    if (!t.owner) return finish(settle_verdict::give_up);
    const auto next = now + t.backoff;
    if (!(next < t.give_up && next + margin() < lease_until(*t.owner)))
        return finish(settle_verdict::give_up);
    settle_step s{settle_verdict::retry, t.backoff};
    t.backoff = std::min(t.backoff * 2, max_settle_backoff);
    return s;
}

bool consumer_lease::retire(ref who) {
    if (current_identity().who != who) return false;  // retired already
    ids_.push_back({next_ref_++, fresh_id_(), {}, 0});
    return true;
}

long consumer_lease::outstanding(ref who) const {
    const auto* i = find(who);
    return i ? i->outstanding : 0;
}

}  // namespace redcoord::detail
