#include "hold_common.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/lock/errors.hpp>
#include <redcoord/core/token.hpp>

#include <algorithm>

namespace redcoord::detail {

bool local_gate::enter(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock l(mu_);
    if (busy_ && owner_ == std::this_thread::get_id())
        throw invalid_argument("lock object already held by this thread (locks are not recursive)");
    if (!cv_.wait_until(l, deadline, [&] { return !busy_; })) return false;
    busy_ = true;
    owner_ = std::this_thread::get_id();
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

std::chrono::microseconds jitter(std::chrono::milliseconds upto) {
    if (upto.count() <= 0) return std::chrono::microseconds(0);
    const auto us = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(upto).count());
    return std::chrono::microseconds(static_cast<std::int64_t>(random_between(0, us)));
}

std::chrono::microseconds contention_backoff(unsigned losses, std::chrono::milliseconds cap) {
    if (losses == 0 || cap.count() <= 0) return std::chrono::microseconds(0);
    const auto cap_us = std::chrono::duration_cast<std::chrono::microseconds>(cap).count();
    const auto shift = std::min(losses - 1, 20u);
    const auto upto = std::min<std::int64_t>(cap_us, std::int64_t{250} << shift);
    return std::chrono::microseconds(static_cast<std::int64_t>(random_between(0, static_cast<std::uint64_t>(upto))));
}

std::string ms_arg(std::chrono::milliseconds d) { return std::to_string(d.count()); }

hold_state::hold_state(std::string r, std::string_view k, std::string_view prefix, std::chrono::milliseconds ttl)
    : resource(std::move(r)), kind(k) {
    validate_name(resource, "lock resource");
    key = make_key(prefix, "lock", resource);
    fence_key = make_key(prefix, "lock", resource, "fence");
    channel = key + ":released";  // the release script derives it the same way from KEYS[1]
    ttl_arg = ms_arg(ttl);

}

std::optional<lock_acquisition> hold_state::take_hold() {
    std::lock_guard l(mu);
    if (!held) return std::nullopt;
    std::optional<lock_acquisition> a = std::move(held);
    held.reset();
    ++hold_id;
    lost_flag = false;
    if (dog) dog->disarm();
    return a;
}

bool hold_state::lost() const {
    std::lock_guard l(mu);
    return held && (lost_flag || std::chrono::steady_clock::now() >= held->valid_until);
}

bool hold_state::is_held() const {
    std::lock_guard l(mu);
    return held.has_value();
}

std::optional<lock_acquisition> hold_state::current() const {
    std::lock_guard l(mu);
    return held;
}

std::uint64_t hold_state::fencing_token() const {
    std::lock_guard l(mu);
    if (!held) throw lock_lost(kind + " '" + resource + "' is not held");
    return held->fencing_token;
}

void hold_state::check_held() const {
    if (!is_held()) throw lock_lost(kind + " '" + resource + "' is not held");
    if (lost()) throw lock_lost(kind + " '" + resource + "' was lost (expired or taken over)");
}

}  // namespace redcoord::detail
