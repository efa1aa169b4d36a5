#pragma once
/// @file
/// The master behind a Sentinel endpoint, as the pools and the pub/sub links reach it: an
/// interface of the pool layer that the topology layer's sentinel_resolver implements, so
/// neither includes the resolver (scripts/core-layers). Internal to redcoord; not a stable API.

#include <redcoord/core/connection.hpp>
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/export.hpp>

#include <boost/signals2/connection.hpp>

#include <chrono>
#include <functional>
#include <optional>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// Where the current master is and how to reach it; see sentinel_resolver for the contract of
/// each member. Thread-safety: every member may be called from any thread.
class master_source {
public:
    /// A callback for on_master_changed(): (old master, new master).
    using master_changed_slot = std::function<void(const host_port& from, const host_port& to)>;

    virtual ~master_source() = default;
    /// The last known master without any I/O (nullopt before the first resolution).
    [[nodiscard]] virtual std::optional<host_port> cached_master() const = 0;
    /// The current master's address, asking the sentinels when none is known or the known one
    /// was reported failed, within `wait` (milliseconds). Blocks: never on an event loop's
    /// thread.
    [[nodiscard]] virtual host_port master(std::chrono::milliseconds wait) = 0;
    /// A connection to the current master, its role verified, within `timeout` (milliseconds).
    [[nodiscard]] virtual connection connect(std::chrono::milliseconds timeout) = 0;
    /// `addr` failed: the next resolution asks again. Never throws.
    virtual void report_failure(const host_port& addr) noexcept = 0;
    /// Calls `slot` whenever the master address changes, until the connection is dropped.
    [[nodiscard]] virtual boost::signals2::scoped_connection on_master_changed(
        master_changed_slot slot) = 0;
};

}  // namespace redcoord::detail
REDCOORD_API_END
