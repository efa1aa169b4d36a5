#include <redcoord/core/detail/link_policy.hpp>

#include <algorithm>
#include <cstdint>

namespace redcoord::detail {
namespace {

using time_point = link_policy::time_point;
using duration = link_policy::duration;

// now + d without overflow: reconnect_max and health_interval may be as large as the caller likes.
time_point saturated(time_point now, duration d) noexcept {
    if (d <= duration::zero()) return now;
    if (time_point::max() - now <= d) return time_point::max();
    return now + d;
}

// A caller's milliseconds as the clock's duration, saturated (milliseconds::max() does not
// fit in nanoseconds).
duration span(std::chrono::milliseconds d) noexcept {
    constexpr auto most = std::chrono::duration_cast<std::chrono::milliseconds>(duration::max());
    return d >= most ? duration::max() : std::chrono::duration_cast<duration>(d);
}

// d * n, saturated.
duration times(duration d, int n) noexcept {
    return d >= duration::max() / n ? duration::max() : d * n;
}

std::optional<time_point> earliest(std::optional<time_point> a,
                                   std::optional<time_point> b) noexcept {
    if (!a) return b;
    if (!b) return a;
    return std::min(*a, *b);
}

}  // namespace

link_policy::link_policy(settings s) noexcept
    : s_(s), backoff_(s.reconnect_min), drain_(span(s.drain_interval)) {}

void link_policy::linked(time_point now) noexcept {
    linked_at_ = now;
    last_data_ = now;
    last_ping_ = now;
    drain_ = span(s_.drain_interval);
    next_drain_ = saturated(now, drain_);
}

time_point link_policy::retry_at(time_point now, std::uint64_t random) noexcept {
    // Only a session that lasted resets the backoff: a link the server (an output buffer
    // limit, a proxy) kills right after subscribing must not be redialled every
    // reconnect_min forever.
    if (linked_at_ && now - *linked_at_ >= span(s_.reconnect_max)) backoff_ = s_.reconnect_min;
    linked_at_.reset();
    const auto half = static_cast<std::uint64_t>(backoff_.count() / 2);
    const auto jitter = half == ~std::uint64_t{0} ? random : random % (half + 1);
    const auto jitter_ms = std::chrono::milliseconds(
        static_cast<std::int64_t>(std::min<std::uint64_t>(jitter, INT64_MAX)));
    const auto due = saturated(saturated(now, span(backoff_)), span(jitter_ms));
    backoff_ = backoff_ >= s_.reconnect_max / 2 ? s_.reconnect_max : backoff_ * 2;
    return due;
}

void link_policy::heard(time_point at) noexcept { last_data_ = std::max(last_data_, at); }

void link_policy::pinged(time_point now) noexcept { last_ping_ = now; }

link_policy::health link_policy::check(time_point now) const noexcept {
    const duration hi = span(s_.health_interval);
    if (hi <= duration::zero()) return health::ok;
    if (hi < duration::max() / 3 && now - last_data_ > 3 * hi) return health::silent;
    if (now - last_ping_ >= hi && now - last_data_ >= hi) return health::ping;
    return health::ok;
}

void link_policy::unwatched(time_point now) noexcept { next_drain_ = saturated(now, drain_); }

void link_policy::drained(time_point now, bool got) noexcept {
    const duration most = times(span(s_.drain_interval), 16);
    drain_ = got ? span(s_.drain_interval) : std::min(times(drain_, 2), most);
    next_drain_ = saturated(now, drain_);
}

std::optional<time_point> link_policy::next_due(time_point now, bool watching) const noexcept {
    std::optional<time_point> due;
    const duration hi = span(s_.health_interval);
    if (hi > duration::zero()) {
        const auto ping = saturated(std::max(last_ping_, last_data_), hi);
        // One tick past three intervals: check() gives up on a silence longer than that.
        const auto silent = hi < duration::max() / 3 ? saturated(last_data_, 3 * hi + duration(1))
                                                     : time_point::max();
        due = std::min(ping, silent);
    }
    if (lazy()) {
        // A lazy link that watches looks at its demand again now and then (every health
        // interval, or every second without one, and at most 16 drains apart), so it
        // returns to its drain timer soon after the demand is gone.
        const duration tick = hi > duration::zero() ? hi : duration(std::chrono::seconds(1));
        due = earliest(due, watching
                                ? saturated(now, std::min(tick, times(span(s_.drain_interval), 16)))
                                : next_drain_);
    }
    return due;
}

}  // namespace redcoord::detail
