#include "party.hpp"

#include "signaling_scripts.hpp"

#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord_lua/signaling.hpp>

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/signaling/double_barrier.hpp>

namespace redcoord {

namespace {

// signaling/src/lua/double_barrier_phase.lua after the party fragment. Leases are scored in
// server time (TIME). Every mode drops members whose lease ran out, in the ready phase too, so
// a dead member cannot keep a round open; a member is told it is inside only while the members
// set names it.
const script double_phase_script(std::string(detail::party_lua) + detail::double_barrier_phase_lua,
                                 cluster_publish::sharded);

}  // namespace

namespace detail {
const script& double_barrier_script() { return double_phase_script; }
}  // namespace detail

struct double_barrier::phase {
    // One run of the script; `any_parties` skips the party-count check (reset).
    static detail::phase_reply run(double_barrier& b, const char* mode, bool any_parties = false) {
        return detail::run_phase(
            double_phase_script, b.hub_.master(), {b.state_key_, b.members_key_},
            {b.member_, any_parties ? "0" : std::to_string(b.parties_),
             std::to_string(b.opts_.arrival_lease.count()), b.channel_, b.hub_.envelope({}), mode,
             std::to_string(b.round_), std::to_string(b.opts_.idle_ttl.count())},
            "double_barrier");
    }
    static barrier_lease_lost lost(const double_barrier& b) {
        return barrier_lease_lost("double_barrier '" + b.name_ + "'", b.round_);
    }
};

double_barrier::double_barrier(signal_hub& hub, std::string name, std::size_t parties,
                               barrier_options opts)
    : hub_(hub), name_(std::move(name)), parties_(parties), opts_(opts),
      rt_(hub.master().runtime()) {
    detail::validate_party("double_barrier", name_, parties_, opts_);
    const auto& prefix = hub_.options().prefix;
    state_key_ = make_key(prefix, "double_barrier", name_);
    members_key_ = make_key(prefix, "double_barrier", name_, "members");
    channel_ = state_key_;
}

double_barrier::~double_barrier() {
    stop_heartbeat();
    if (!inside_) return;
    try {
        (void)phase::run(*this, "leave");
    } catch (...) {}
}

void double_barrier::start_heartbeat() {
    // The tick reads member_ and round_, which enter() and leave() change only while no
    // heartbeat exists (stop_heartbeat() waits for a running tick).
    heartbeat_ = std::make_unique<detail::timer>(
        rt_->timers(), [this]() -> std::optional<detail::timer::time_point> {
            try {
                if (phase::run(*this, "keep").code == detail::lost)
                    return std::nullopt;  // leave() reports it
            } catch (...) {
                // A failed refresh is retried at the next tick; the lease outlasts two misses.
            }
            return deadline_after(detail::refresh_period(opts_), rt_->clock().now());
        });
    // On the runtime's clock, as every due time of its timers (runtime_clock).
    heartbeat_->arm(deadline_after(detail::refresh_period(opts_), rt_->clock().now()));
}

void double_barrier::stop_heartbeat() noexcept { heartbeat_.reset(); }

void double_barrier::enter(std::chrono::milliseconds timeout) {
    if (inside_) throw usage_error("double_barrier '" + name_ + "': enter() while already inside");
    const auto deadline = deadline_after(timeout);
    auto w = hub_.listen({channel_});  // subscribe first, then read state, then wait
    const bool resuming = resume_entry_;
    resume_entry_ = false;
    if (!resuming) member_ = random_token();
    try {
        detail::phase_reply r;
        bool entered = false;
        if (resuming) {
            // The last enter() ended by an error, its entry perhaps counting: inside already
            // if its round became ready with it; else enter again under the same id, which
            // refreshes that entry rather than add a second one.
            r = phase::run(*this, "refresh");
            entered = r.code != detail::lost;
        }
        if (!entered) {
            r = phase::run(*this, "enter");
            round_ = r.generation;
        }
        while (r.code != detail::passed) {
            if (r.code == detail::lost) throw phase::lost(*this);
            const bool blocked = r.code == detail::blocked;  // the previous round still leaving
            if (!detail::await_wake(w, deadline, detail::refresh_period(opts_))) {
                if (blocked)
                    throw barrier_timeout(name_, 0, parties_,
                                          "entered (the previous round is still leaving)");
                r = phase::run(*this, "withdraw");
                if (r.code == detail::waiting)
                    throw barrier_timeout(name_, r.count, parties_, "entered");
                continue;  // inside or lost while we gave up
            }
            r = phase::run(*this, blocked ? "enter" : "refresh");
            if (blocked) round_ = r.generation;
        }
    } catch (const barrier_timeout&) {
        throw;  // withdrawn, or never entered (blocked)
    } catch (const barrier_lease_lost&) {
        throw;  // counts nowhere
    } catch (const error&) {
        resume_entry_ = true;
        throw;
    }
    inside_ = true;
    start_heartbeat();
}

void double_barrier::leave(std::chrono::milliseconds timeout) {
    if (!inside_) throw usage_error("double_barrier '" + name_ + "': leave() without enter()");
    const auto deadline = deadline_after(timeout);
    auto w = hub_.listen({channel_});
    stop_heartbeat();
    detail::phase_reply r;
    try {
        r = phase::run(*this, "leave");
    } catch (...) {
        start_heartbeat();  // still inside: keep the lease while the caller decides
        throw;
    }
    inside_ = false;
    if (r.code == detail::lost) throw phase::lost(*this);
    while (r.code == detail::waiting) {
        if (!detail::await_wake(w, deadline, detail::refresh_period(opts_)))
            throw barrier_timeout(name_, r.count, parties_, "still inside");
        r = phase::run(*this, "check");
    }
}

bool double_barrier::reset() {
    return phase::run(*this, "reset", /*any_parties=*/true).code == detail::passed;
}

}  // namespace redcoord
