#pragma once
/// @file
/// Redis Sentinel support: find the current master of a monitored service, list its replicas,
/// and follow failovers. Follows the client guidelines of the Redis documentation
/// ("Sentinel client spec", redis.io/docs/reference/sentinel-clients): ask the sentinels with
/// `SENTINEL get-master-addr-by-name`, verify with `ROLE` that the address really is a master,
/// re-resolve after connection errors, and listen to the sentinels' `+switch-master` events.

#include <redcoord/core/connection.hpp>
#include <redcoord/core/detail/master_source.hpp>
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/subscriber.hpp>

#include <boost/signals2/signal.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// The sentinels could not name a usable master for the service. A connection_error, so
/// callers that retry on connection failures retry on this too.
class sentinel_error : public connection_error {
public:
    using connection_error::connection_error;
};

/// No sentinel of the list answered (all refused, closed, or timed out).
class sentinel_unreachable : public sentinel_error {
public:
    using sentinel_error::sentinel_error;
};

/// Every sentinel that answered said it does not monitor the service name (a usage error:
/// wrong name in the `redis-sentinel://.../service` URI).
class unknown_service : public sentinel_error {
public:
    using sentinel_error::sentinel_error;
};

/// Timing of a sentinel_resolver.
struct sentinel_options {
    /// Deadline for one round of questions to all sentinels (asked in parallel, see
    /// fan_out.hpp), in milliseconds. Must be > 0.
    std::chrono::milliseconds query_timeout{500};
    /// After a resolution whose master could not be confirmed, the next resolution waits at
    /// least this long; the pause doubles up to `backoff_max` and resets once a master is
    /// confirmed (connected, `ROLE` = master). Zero: no pause (not recommended).
    std::chrono::milliseconds backoff_min{10};
    /// Longest pause between two resolutions. Must be >= backoff_min.
    std::chrono::milliseconds backoff_max{100};
    /// Subscribe to `+switch-master` and `+promoted-slave` on every sentinel, so a failover is
    /// followed as soon as a sentinel announces it instead of at the next connection error.
    bool follow_notifications = true;
    /// Reconnect timing of the notification subscribers (their `runtime`, when empty, is the
    /// resolver's).
    subscriber_options notifications{};
    /// The runtime whose threads read the notification links and whose pools ask the
    /// sentinels; empty means the process's runtime::shared().
    std::shared_ptr<redcoord::runtime> runtime{};
};

/// Resolves the master of one Sentinel-monitored service and follows its failovers.
///
/// One resolver is shared by every borrower of a pool: at most one round of questions to
/// the sentinels is in flight at a time, concurrent callers wait for its answer, and rounds
/// that do not yield a confirmed master are spaced by an exponential backoff, so a failover
/// does not cause a thundering herd of reconnects against the sentinels.
///
/// A round asks every sentinel at once; each answer is a vote (core/src/sentinel_resolve.hpp):
/// while the sentinels disagree, the address named by most of them is used even when it
/// failed recently (retried after the backoff), because a minority may still name a demoted
/// master that this client can reach but that is partitioned from the sentinels; when they
/// agree, an address that failed recently is tried last. While every named address is
/// failing (a failover in progress), the replica the failover leader flagged `promoted`
/// (`SENTINEL replicas`) is added as a candidate: the sentinels only name it after their
/// next INFO of it (up to a second after its promotion).
///
/// What the caller connects to is checked: its role is read with `ROLE`, or, when the
/// endpoint's ACL user may not run it (ROLE is `@admin @dangerous`), with the `role` field
/// of `HELLO 2`, or with `INFO replication`. A node that says it is a replica is not a
/// master, and resolution is retried. When the user may run none of the three, the address
/// is accepted only if a majority of the configured sentinels named it in the last round.
/// Asynchronous replication still allows a failover to lose writes; set
/// `min-replicas-to-write` on the servers to bound that.
///
/// Notifications: when `follow_notifications` is set, the first resolution starts one
/// subscriber per sentinel (reader threads owned by the resolver) on `+switch-master` and
/// `+promoted-slave`; an announcement for this service moves the master at once.
///
/// @par Thread safety
/// Every member function may be called from any thread.
///
/// @par Errors
/// Resolving throws sentinel_unreachable when no sentinel answers, unknown_service when every
/// sentinel that answered does not know the service, and sentinel_error when they name no usable
/// master; slots' exceptions are swallowed.
///
/// @par Cost
/// A resolution asks the configured sentinels (`SENTINEL get-master-addr-by-name`, one round trip
/// each) and checks the named master's role (`ROLE`, one round trip); following failovers keeps one
/// pub/sub subscription per sentinel on the runtime's threads.
class sentinel_resolver : public detail::master_source {
public:
    /// Prepares a resolver; nothing connects until the first call that needs the master.
    /// `service` must be a Sentinel endpoint (`redis-sentinel://h1:p1,h2:p2/name`): the
    /// sentinels are reached with `sentinel_password` (no user), the data nodes with the
    /// endpoint's user, password, db and timeouts.
    /// @throws invalid_argument when `service` is not a Sentinel endpoint, has an empty
    ///         service name, or the options are invalid.
    explicit sentinel_resolver(endpoint service, sentinel_options opts = {});
    /// Stops the notification subscribers; never throws.
    ~sentinel_resolver() override;
    sentinel_resolver(const sentinel_resolver&) = delete;
    sentinel_resolver& operator=(const sentinel_resolver&) = delete;

    /// The current master's address: the cached one, or a fresh resolution when none is
    /// known or the cached one was reported failed. Waits for a resolution already in flight
    /// and for the backoff, up to `wait` (milliseconds).
    /// @throws unknown_service, sentinel_unreachable, auth_error (a sentinel refused the
    ///         sentinel password) when the sentinels cannot name a master;
    /// @throws timeout_error when `wait` passes while waiting for another caller's round.
    [[nodiscard]] host_port master(std::chrono::milliseconds wait) override;
    /// Same with the endpoint's connect_timeout as the wait.
    [[nodiscard]] host_port master();

    /// The last known master without any I/O (nullopt before the first resolution).
    [[nodiscard]] std::optional<host_port> cached_master() const override;

    /// Opens a connection to the current master and verifies its role (see above),
    /// re-resolving and retrying (with the backoff) until `timeout` (milliseconds) when the
    /// address does not answer or is not a master. The whole call, connect and role check
    /// included, ends within `timeout` (each step gets what is left of it, the role check at
    /// most the endpoint's command_timeout), apart from DNS resolution, which is unbounded.
    /// @throws unknown_service, auth_error at once (retrying cannot help);
    /// @throws sentinel_error (or a subclass) when no verified master was reached in time,
    ///         with the last failure in the message.
    [[nodiscard]] connection connect(std::chrono::milliseconds timeout) override;

    /// Tells the resolver that `addr` failed (connection error, `READONLY` reply, wrong role):
    /// if it is the cached master, the next master() asks the sentinels again. Never throws.
    void report_failure(const host_port& addr) noexcept override;

    /// The replicas the sentinels report for the service, excluding those flagged down or
    /// disconnected, in the sentinel's order. Asks the sentinels one by one until one answers.
    /// @throws unknown_service, sentinel_unreachable, auth_error as master().
    [[nodiscard]] std::vector<host_port> replicas();

    /// How many rounds of questions were sent to the sentinels so far.
    [[nodiscard]] std::uint64_t rounds() const;
    /// How many times the master address changed after the first resolution (failovers seen).
    [[nodiscard]] std::uint64_t switches() const;
    /// The Sentinel endpoint this resolver serves.
    [[nodiscard]] const endpoint& where() const noexcept;

    /// Calls `slot` with (old master, new master) whenever the cached master address changes
    /// after the first resolution, until the returned connection is disconnected or destroyed
    /// (dropping it disconnects at once: keep it as long as the slot should run).
    /// Thread: the one that saw the change (a notification reader thread or a caller of
    /// master()/connect()); slots must be quick and must not block on this resolver.
    /// Order: the slots of one change run one after another in connection order; changes seen
    /// by different threads at once may be reported concurrently, so a slot that needs the
    /// latest master reads cached_master(). Disconnecting does not wait for a call already
    /// running. An exception from a slot is swallowed (it skips the later slots of that change).
    /// Thread-safety: may be called from any thread, also from a slot.
    [[nodiscard]] boost::signals2::scoped_connection on_master_changed(
        master_changed_slot slot) override;

private:
    boost::signals2::signal<void(const host_port&, const host_port&)> master_changed_;
    struct impl;
    std::shared_ptr<impl> impl_;
};

/// The resolver shared by every connection_pool and subscriber of the process's default
/// runtime (runtime::shared()) opened with an equal Sentinel endpoint (same sentinels, service,
/// credentials, db and timeouts), so they follow one view of the master and resolve once for
/// all: `runtime::shared()->sentinel(service)`. Created on first use, with default
/// sentinel_options; destroyed when the last user lets go. Pools and subscribers of another
/// runtime use that runtime's resolver (runtime::sentinel()).
/// @throws invalid_argument as sentinel_resolver's constructor.
/// Thread-safety: safe from any thread.
[[nodiscard]] std::shared_ptr<sentinel_resolver> shared_sentinel_resolver(const endpoint& service);

/// The replicas of a server or service, as endpoints carrying `ep`'s credentials and timeouts.
///
/// For a Sentinel endpoint: the replicas the sentinels report (`SENTINEL replicas`), without
/// those flagged down. For one server: the replicas its `ROLE` reply lists when it is a master
/// (none when it is a replica). ROLE is in the ACL categories `@admin` and `@dangerous`: when the
/// server refuses it (a user with `-@dangerous`), they come from `INFO replication`, and when
/// it refuses that too, the answer is none (no error: the replicas are an optional extra).
/// Used by signaling to subscribe on every replica.
/// @throws connection_error, timeout_error, auth_error when the server or sentinels cannot be
///         asked; unknown_service for an unknown Sentinel service.
[[nodiscard]] std::vector<endpoint> discover_replicas(const endpoint& ep);

}  // namespace redcoord

REDCOORD_API_END
