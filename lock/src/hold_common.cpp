#include "hold_common.hpp"
#include "lock_keys.hpp"

#include <redcoord/core/detail/lease_schedule.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/lock/errors.hpp>

#include <algorithm>

namespace redcoord::detail {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool local_gate::enter(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock l(mu_);
    if (busy_ && owner_ == std::this_thread::get_id())
        throw invalid_argument("lock object already held by this thread (locks are not recursive)");
    if (!cv_.wait_until(l, deadline, [&] { return !busy_; })) return false;
    busy_ = true;
    owner_ = std::this_thread::get_id();
    return true;
}

bool local_gate::try_enter() noexcept {
    std::lock_guard l(mu_);
    if (busy_) return false;
    busy_ = true;
    owner_ = {};  // no thread owns an asynchronous acquire
    return true;
}

void local_gate::leave() noexcept {
    {
        std::lock_guard l(mu_);
        busy_ = false;
        owner_ = {};
    }
    cv_.notify_one();
}

hold_state::hold_state(std::string r, std::string_view k, std::string_view prefix, lease_settings l)
    : resource(std::move(r)), kind(k), lease(l) {
    validate_name(resource, "lock resource");
    auto keys = make_lock_keys(prefix, resource);
    key = std::move(keys.key);
    const std::string released = key + ":released";  // the release script derives it alike
    const std::string_view parts[] = {keys.fence_key, released, keys.turn_key, keys.waiting_key,
                                      keys.fair_queue_key};
    std::size_t size = 0;
    for (auto p : parts) size += p.size();
    derived_keys_.reserve(size);
    for (auto p : parts) derived_keys_.append(p);
    const std::string_view all = derived_keys_;
    std::string_view* const views[] = {&fence_key, &channel, &turn_key, &waiting_key,
                                       &fair_queue_key};
    std::size_t at = 0;
    for (std::size_t i = 0; i < std::size(parts); ++i) {
        *views[i] = all.substr(at, parts[i].size());
        at += parts[i].size();
    }
}

const runtime_clock& hold_state::lease_clock() const {
    return (rt ? *rt : *redcoord::runtime::shared()).clock();
}

clock_type::time_point hold_state::lease_now() const { return lease_clock().now(); }

clock_type::time_point hold_state::valid_until_after(clock_type::time_point t0,
                                                     milliseconds ttl) const {
    return lease_schedule(ttl, lease.drift_factor).valid_until(t0);
}

std::optional<clock_type::time_point> hold_state::first_due(clock_type::time_point until) const {
    if (lease.watchdog)
        return lease_now() + lease_schedule(lease.ttl, lease.drift_factor).renew_period();
    if (lost_slots && !lost_slots->empty()) return until;
    return std::nullopt;
}

std::unique_ptr<watchdog> hold_state::make_dog() {
    auto tick = [this](std::uint64_t id) { return lease_tick(id); };
    return rt ? std::make_unique<watchdog>(rt, tick) : std::make_unique<watchdog>(tick);
}

void hold_state::commit_hold(lock_acquisition a) {
    detail::lock_guard l(mu);
    const auto due = first_due(a.valid_until);
    if (due) {
        if (!dog) dog = make_dog();
        dog->arm(hold_id + 1, *due);  // may throw (no thread): then nothing is held
    }
    held = std::move(a);
    ++hold_id;
    extensions = 0;
    lost_flag = false;
}

boost::signals2::scoped_connection hold_state::connect_lost(
    const std::function<void(const std::string&)>& h) {
    lost_signal* slots = nullptr;
    {
        detail::lock_guard l(mu);
        if (!lost_slots) lost_slots = std::make_unique<lost_signal>();
        slots = lost_slots.get();
    }
    auto c = slots->connect(h);  // outside mu: a slot running now may read this object
    arm_loss_notice();
    return c;
}

void hold_state::arm_loss_notice() {
    detail::lock_guard l(mu);
    if (!held || lost_flag || lease.watchdog) return;  // the watchdog's timer reports it already
    if (!dog) dog = make_dog();
    dog->arm(hold_id, held->valid_until);
}

void hold_state::observe_as(std::string_view metric_kind) {
    if (!rt) return;
    const detail::metrics_scope ms(*rt);
    if (!ms) return;
    const std::string k(metric_kind), n = ms.name(resource);
    auto o = std::make_unique<observer>();
    o->acquired = ms.histogram(metric::lock_acquire_seconds,
                               {{"kind", k}, {"name", n}, {"outcome", "acquired"}});
    o->timed_out = ms.histogram(metric::lock_acquire_seconds,
                                {{"kind", k}, {"name", n}, {"outcome", "timeout"}});
    o->failed = ms.histogram(metric::lock_acquire_seconds,
                             {{"kind", k}, {"name", n}, {"outcome", "error"}});
    o->lost = ms.counter(metric::lock_lost_total, {{"kind", k}, {"name", n}});
    if (metric_kind == "redlock")
        o->quorum_failures = ms.counter(metric::redlock_quorum_failures_total, {{"name", n}});
    obs = std::move(o);
}

void hold_state::mark_lost(std::uint64_t id, std::string_view why) {
    std::string fence;
    strand* deliver = nullptr;
    lost_signal* slots = nullptr;
    {
        detail::lock_guard l(mu);
        if (!held || hold_id != id || lost_flag) return;
        lost_flag = true;
        fence = std::to_string(held->fencing_token);
        slots = lost_slots.get();
        if (rt && slots && !notices) {
            try {
                notices = std::make_unique<strand>(rt->callbacks());
            } catch (...) {
                // No memory for a strand: the slots run below, on this thread.
            }
        }
        deliver = notices.get();
    }
    // The record before the count: both may be queued in order on one strand, and a reader
    // that sees the count can then rely on the record having reached the sink.
    if (rt)
        rt->emit(
            log_level::warning, "lock", "lock lost",
            {{"kind", kind}, {"resource", resource}, {"fencing_token", fence}, {"reason", why}});
    if (obs) obs->lost.inc();
    if (!slots) return;  // no on_lost() slot was ever connected
    auto notify = [this, slots] {
        try {
            (*slots)(resource);
        } catch (...) {
            // A throwing callback must not break the other callbacks of this object.
        }
    };
    if (deliver) {
        try {
            deliver->post(notify);
            return;
        } catch (...) {
            // No callback thread could start: better late on this thread than never.
        }
    }
    notify();
}

extend_result hold_state::extend_hold(std::optional<std::uint64_t> expected, milliseconds ttl) {
    std::string token;
    std::uint64_t id = 0;
    clock_type::time_point until;
    {
        detail::lock_guard l(mu);
        if (!held || (expected && *expected != hold_id)) return extend_result::not_held;
        if (lost_flag) return extend_result::lost;
        id = hold_id;
        until = held->valid_until;
        if (lease_now() < until) {
            if (extensions >= lease.max_extensions) return extend_result::budget_spent;
            token = held->token;
        }
    }
    if (token.empty()) {  // the validity passed without extension: another may hold it already
        mark_lost(id, "validity ended before the extension");
        return extend_result::lost;
    }
    const auto t0 = lease_now();
    extend_result r = extend_result::not_confirmed;
    try {
        r = extend_round(token, ttl, t0);
    } catch (...) {
        // Sent or not, the request may have shortened the key (a smaller ttl): so must we.
        detail::lock_guard l(mu);
        if (held && hold_id == id)
            held->valid_until = std::min(held->valid_until, valid_until_after(t0, ttl));
        throw;
    }
    switch (r) {
        case extend_result::extended: {
            // A reply that comes after the old validity cannot vouch for the time between.
            if (lease_now() >= until) break;
            detail::lock_guard l(mu);
            if (held && hold_id == id) {
                held->valid_until = valid_until_after(t0, ttl);
                ++extensions;
            }
            return r;
        }
        case extend_result::not_confirmed: {
            detail::lock_guard l(mu);
            if (held && hold_id == id)
                held->valid_until = std::min(held->valid_until, valid_until_after(t0, ttl));
            return r;
        }
        default: break;
    }
    mark_lost(id, "extension refused: the key expired or another holds it");
    return extend_result::lost;
}

std::optional<clock_type::time_point> hold_state::lease_tick(std::uint64_t id) {
    bool can_extend = false;
    clock_type::time_point until;
    {
        detail::lock_guard l(mu);
        if (!held || hold_id != id || lost_flag) return std::nullopt;
        until = held->valid_until;
        can_extend = lease.watchdog && extensions < lease.max_extensions;
    }
    if (lease_now() >= until) {
        mark_lost(id, lease.watchdog ? "validity ended unconfirmed (watchdog extensions failed)"
                                     : "validity ended");
        return std::nullopt;
    }
    // No extension left to make: report the loss when the validity ends, before the key can
    // expire, so a holder's on_lost always hears of it.
    if (!can_extend) return until;
    const auto period = lease_schedule(lease.ttl, lease.drift_factor).renew_period();
    extend_result r = extend_result::not_confirmed;
    // The next extension is due a period after this one started, not after it ended: a round
    // slowed by a loaded machine must not push every later extension closer to the expiry.
    const auto started = lease_now();
    try {
        r = extend_hold(id, lease.ttl);
    } catch (const error&) {
        r = extend_result::not_confirmed;  // the old (maybe shortened) validity stands
    }
    detail::lock_guard l(mu);
    if (!held || hold_id != id || lost_flag) return std::nullopt;
    switch (r) {
        case extend_result::extended: return std::max(lease_now(), started + period);
        // Not confirmed: retry soon, and the tick at the validity's end reports the loss.
        case extend_result::not_confirmed:
            return std::min(lease_now() + period / 2, held->valid_until);
        case extend_result::budget_spent: return held->valid_until;
        default: return std::nullopt;
    }
}

void hold_state::stop_lease_work() noexcept {
    dog.reset();
    strand* n = nullptr;
    {
        detail::lock_guard l(mu);
        n = notices.get();
    }
    // Outside mu: a running slot may read this object's state.
    if (n) n->close();
}

std::optional<lock_acquisition> hold_state::take_hold() {
    detail::lock_guard l(mu);
    if (!held) return std::nullopt;
    std::optional<lock_acquisition> a = std::move(held);
    held.reset();
    ++hold_id;
    lost_flag = false;
    if (dog) dog->disarm();
    return a;
}

bool hold_state::lost() const {
    detail::lock_guard l(mu);
    return held && (lost_flag || lease_now() >= held->valid_until);
}

bool hold_state::is_held() const {
    detail::lock_guard l(mu);
    return held.has_value();
}

std::optional<lock_acquisition> hold_state::current() const {
    detail::lock_guard l(mu);
    return held;
}

std::uint64_t hold_state::fencing_token() const {
    detail::lock_guard l(mu);
    if (!held) throw lock_lost(std::string(kind) + " '" + resource + "' is not held");
    return held->fencing_token;
}

void hold_state::check_held() const {
    if (!is_held()) throw lock_lost(std::string(kind) + " '" + resource + "' is not held");
    if (lost())
        throw lock_lost(std::string(kind) + " '" + resource + "' was lost (expired or taken over)");
}

}  // namespace redcoord::detail
