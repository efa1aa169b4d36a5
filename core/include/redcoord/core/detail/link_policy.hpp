#pragma once
/// @file
/// The timing decisions of one subscriber link, without I/O: when to redial after a failure
/// (exponential backoff with jitter), when to PING an idle link and when to give a silent
/// one up, and when a link read on demand is drained. Internal to core (public only so that
/// it can be tested without a server); not a stable API.

#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstdint>
#include <optional>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// Policy of one subscriber link (see subscriber_options). A plain value: no clock reads, no
/// randomness of its own, no threads; "now" and a random number are inputs.
///
/// Thread-safety: none; the link reactor keeps it under the link's mutex.
class link_policy {
public:
    using clock_type = std::chrono::steady_clock;
    using time_point = clock_type::time_point;
    using duration = clock_type::duration;

    /// The subscriber_options fields the policy needs (validated by the subscriber).
    struct settings {
        std::chrono::milliseconds reconnect_min{20};    ///< First redial delay; > 0.
        std::chrono::milliseconds reconnect_max{1000};  ///< Longest redial delay; >= reconnect_min.
        std::chrono::milliseconds health_interval{1000};  ///< PING period; zero: no health check.
        std::chrono::milliseconds drain_interval{
            0};  ///< Zero: always watched; else the drain period.
    };

    /// What the health check asks for at a given time.
    enum class health {
        ok,
        ping,
        silent
    };

    explicit link_policy(settings s) noexcept;

    // ---- reconnecting ----

    /// A session started on a new link at `now`: health and drain timers start over.
    void linked(time_point now) noexcept;
    /// The link ended, or a dial failed, at `now`. Returns when to dial next: the current
    /// backoff plus a jitter of up to half of it, taken from `random` (any value). The
    /// backoff then doubles up to reconnect_max; it starts over at reconnect_min only after
    /// a session that lasted reconnect_max, so a link the server closes right after it is
    /// subscribed is redialled ever more slowly.
    [[nodiscard]] time_point retry_at(time_point now, std::uint64_t random) noexcept;
    /// The delay retry_at() will add before its jitter.
    [[nodiscard]] std::chrono::milliseconds backoff() const noexcept { return backoff_; }

    // ---- health ----

    /// Data was read at `at` (by anyone); earlier times than the last one are ignored.
    void heard(time_point at) noexcept;
    /// A PING was sent at `now`.
    void pinged(time_point now) noexcept;
    /// At `now`: `silent` when nothing was read for more than three health intervals,
    /// `ping` when nothing was read or sent for one, else `ok` (always `ok` without a
    /// health interval).
    [[nodiscard]] health check(time_point now) const noexcept;
    /// The last time data was read.
    [[nodiscard]] time_point last_heard() const noexcept { return last_data_; }

    // ---- reading on demand (drain_interval > 0) ----

    /// True when the link is read on demand.
    [[nodiscard]] bool lazy() const noexcept { return s_.drain_interval.count() > 0; }
    /// The reader stopped watching the socket at `now`: the next drain is one interval away.
    void unwatched(time_point now) noexcept;
    /// A drain at `now` found data (`got`) or not: back to drain_interval after data,
    /// doubled up to 16 times it otherwise.
    void drained(time_point now, bool got) noexcept;
    /// The current drain interval.
    [[nodiscard]] duration drain_interval() const noexcept { return drain_; }
    /// When the next drain is due (while not watching).
    [[nodiscard]] time_point next_drain() const noexcept { return next_drain_; }

    /// When the reader must look at this link again if nothing else happens: the health
    /// check's next step, and the next drain (not `watching`) or the next look at the demand
    /// (lazy and `watching`: one health interval, or one second without one, and at most 16
    /// drain intervals away). nullopt: never.
    [[nodiscard]] std::optional<time_point> next_due(time_point now, bool watching) const noexcept;

private:
    settings s_;
    std::chrono::milliseconds backoff_;
    std::optional<time_point> linked_at_;
    time_point last_data_{};
    time_point last_ping_{};
    duration drain_{};
    time_point next_drain_{};
};

}  // namespace redcoord::detail

REDCOORD_API_END
