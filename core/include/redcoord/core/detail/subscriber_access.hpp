#pragma once
/// @file
/// The subscriber's performance machinery, for redcoord's own drivers (the signal hub, the
/// pub/sub multiplexer) and tests: reading a link on the calling thread, and the demand for
/// prompt delivery of a link read on demand (detail::subscriber_tuning::drain_interval).
/// Internal to redcoord; not a stable API.

#include <redcoord/core/export.hpp>
#include <redcoord/core/subscriber.hpp>

#include <optional>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// Friend access to a subscriber's reading machinery.
class subscriber_access {
public:
    /// Reads and dispatches, on the calling thread, whatever has already arrived on the
    /// link, unless another thread is reading it right now; never blocks. For a thread about
    /// to wait for a message: when the message is already in the socket it gets it without
    /// the hop through the shared reader thread (a wake-up that costs tens of microseconds on
    /// a busy machine). The message handler then runs on the calling thread, still one call
    /// at a time and in arrival order. A read failure is left to the reader, which
    /// reconnects as usual.
    /// @return true when something was read.
    static bool help_read(subscriber& s) noexcept;

    /// Raises (`delta` > 0) or lowers (`delta` < 0) the demand for prompt delivery, a count
    /// that only matters with subscriber_tuning::drain_interval > 0: while it is above zero
    /// the reader watches the socket and delivers each message as it arrives. Raising it from
    /// zero wakes the reader so that it starts watching at once. Never blocks; prefer
    /// demand_hold, which keeps raises and lowers balanced.
    static void adjust_demand(subscriber& s, int delta) noexcept;

    /// The server's error text when it refused `name` (a pattern when `pattern`) on the
    /// current link since it was last subscribed (e.g. `NOPERM`: the ACL user may not access
    /// the channel); nullopt otherwise. Thread-safe.
    static std::optional<std::string> refusal(const subscriber& s, bool pattern,
                                              const std::string& name);
};

/// Raises a subscriber's demand for prompt delivery for its lifetime (see
/// subscriber_access::adjust_demand()).
class demand_hold {
public:
    explicit demand_hold(subscriber& s) noexcept : s_(&s) {
        subscriber_access::adjust_demand(s, 1);
    }
    ~demand_hold() { subscriber_access::adjust_demand(*s_, -1); }
    demand_hold(const demand_hold&) = delete;
    demand_hold& operator=(const demand_hold&) = delete;

private:
    subscriber* s_;
};

}  // namespace redcoord::detail

REDCOORD_API_END
