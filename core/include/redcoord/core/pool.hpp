#pragma once
/// @file
/// The thread-safe, bounded connection pool every redcoord part takes.

#include <redcoord/core/connection.hpp>
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/export.hpp>

#include <boost/signals2/connection.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// Pool sizing and timing.
struct pool_options {
    /// Most connections open at once (leased + idle). Must be >= 1.
    std::size_t max_size = 16;
    /// Most idle connections kept: a connection returned while this many are idle is closed
    /// (unless a borrower is waiting for one), so a burst that opened max_size connections
    /// does not keep them all open afterwards. Values above max_size act as max_size; 0 keeps
    /// none idle.
    std::size_t max_idle = 4;
    /// How long borrow() waits for a free connection before throwing pool_exhausted;
    /// zero means fail at once when none is free.
    std::chrono::milliseconds borrow_timeout{2000};
    /// An idle connection older than this is PINGed before it is handed out; zero checks
    /// every time. So is one last used before another connection of the pool broke (a reply
    /// lost, a connect refused): after a server restart every idle connection is dead, and
    /// the commands after the first failure get live ones instead of failing one by one.
    std::chrono::milliseconds idle_check_after{30000};
};

/// Counters of a pool, a snapshot.
struct pool_stats {
    std::size_t in_use = 0;     ///< Connections currently leased.
    std::size_t idle = 0;       ///< Connections open and waiting in the pool.
    std::uint64_t created = 0;  ///< Connections opened so far.
    std::uint64_t discarded =
        0;  ///< Connections dropped (poisoned, failed health check, or trimmed).
    std::uint64_t trimmed =
        0;  ///< Of those, connections closed on return beyond pool_options::max_idle.
    std::uint64_t waits = 0;   ///< Borrows that had to wait for a free connection.
    std::uint64_t errors = 0;  ///< Failed connects and exhausted borrows.
};

class cluster_map;
class connection_pool;
class runtime;
class sentinel_resolver;
namespace detail {
struct pool_access;
}

/// An exclusive RAII lease of one pooled connection; returns it on destruction, or
/// discards it when poisoned. Move-only. Destruction never throws.
///
/// @par Thread safety
/// None: a lease belongs to one thread at a time, like the connection it holds.
///
/// @par Errors
/// Never throws (moves, access, return and discard are noexcept).
///
/// @par Cost
/// Nothing is sent: returning the connection takes the pool's mutex.
class pooled_connection {
public:
    pooled_connection() = default;
    /// Takes over the other lease; the other is left empty.
    pooled_connection(pooled_connection&&) noexcept;
    /// Returns this lease's connection (as reset()) and takes over the other's.
    pooled_connection& operator=(pooled_connection&&) noexcept;
    ~pooled_connection();

    /// The leased connection; the lease must not be empty.
    connection& operator*() const noexcept { return *conn_; }
    /// The leased connection; the lease must not be empty.
    connection* operator->() const noexcept { return conn_.get(); }
    /// True while the lease holds a connection (false once moved from or reset).
    [[nodiscard]] explicit operator bool() const noexcept { return conn_ != nullptr; }
    /// Returns the connection to the pool now.
    void reset() noexcept;

private:
    friend class connection_pool;
    pooled_connection(std::shared_ptr<void> state, std::unique_ptr<connection> c) noexcept;
    std::shared_ptr<void> state_;
    std::unique_ptr<connection> conn_;
};

/// A bounded pool of connections to one endpoint, opened lazily.
///
/// @par Thread safety
/// Every member function may be called from any thread. Leases may outlive
/// the pool object (they hold the shared state); connections returned after the pool is
/// gone are closed.
///
/// With a Sentinel endpoint (`redis-sentinel://...`) each new connection is opened to the
/// master the sentinels currently report, its role verified (see sentinel.hpp; the
/// resolver is shared by every pool and subscriber with an equal endpoint). After a failover,
/// idle or returned connections to any other address are closed instead of reused; a
/// connection that broke makes the resolver ask again.
///
/// With a Cluster endpoint (`redis-cluster://...`) the pool keeps the slot map (CLUSTER
/// SHARDS, else CLUSTER SLOTS; asked again after a MOVED, a broken link, and every 10 s) and
/// one pool per node, each sized by these options. borrow_for(key) leases a connection to the
/// master of the key's hash slot; borrow() one to any master. On the connections it leases a
/// command answered `MOVED` is re-sent to the node named (and the map learns it), `ASK` is
/// re-sent after ASKING, and `TRYAGAIN` or `CLUSTERDOWN` is retried with a growing pause
/// (5 ms up to 100 ms) until the command's timeout, then thrown as cluster_unavailable.
/// Pipelined commands and commands queued inside MULTI are not re-sent: their replies are the
/// caller's (a MOVED among them still updates the map). Source: the Redis Cluster
/// specification, "Redirection and resharding".
///
/// A `READONLY` reply to command() or to script::run(pool, ...) (the node is a replica now)
/// closes that connection and every idle one, and with Sentinel makes the resolver ask
/// again; the call still throws reply_error (retry after the failover completes). A
/// `READONLY` seen on a connection the caller borrowed is the caller's to handle.
///
/// @par Errors
/// borrow() throws pool_exhausted when no connection frees up within the borrow timeout, and
/// connection_error, auth_error, tls_error, timeout_error or protocol_error when a new connection
/// cannot be opened; command() adds the errors of connection::command(). The destructor and
/// clear_idle() never throw.
///
/// @par Cost
/// A borrow of an idle connection sends nothing, unless it has been idle past the health-check
/// interval (then one PING round trip); a borrow with none idle opens one (see connection).
/// command() is one round trip on a borrowed connection.
class connection_pool {
public:
    /// Creates an empty pool; nothing connects until the first borrow.
    /// @param ep the server (or Sentinel service) every connection of the pool goes to.
    /// @param opts sizing and timing (pool_options).
    /// @param rt the runtime whose shared threads and pub/sub links the primitives built on
    ///        this pool use; empty means the process's runtime::shared().
    /// @throws invalid_argument when `opts.max_size` is 0.
    explicit connection_pool(endpoint ep, pool_options opts = {},
                             std::shared_ptr<redcoord::runtime> rt = {});
    /// Closes the idle connections. First waits for a connect that fan_out() left running
    /// in the background (at most the endpoint's connect_timeout).
    ~connection_pool();
    connection_pool(const connection_pool&) = delete;
    connection_pool& operator=(const connection_pool&) = delete;

    /// Borrows a connection, waiting up to `pool_options::borrow_timeout` for a free one; the
    /// health check of an idle connection and a new connect keep the endpoint's
    /// command_timeout and connect_timeout (no caller's budget to share).
    /// @throws pool_exhausted when none becomes free in time;
    /// @throws connection_error, auth_error, timeout_error, protocol_error when a new
    ///         connection cannot be opened.
    [[nodiscard]] pooled_connection borrow();
    /// Borrows with an explicit wait (zero: do not wait for a free connection). A wait > 0
    /// bounds the whole call: the wait for a free connection, the health check (PING) of an
    /// idle connection that predates a failure or idled idle_check_after, and a new connect
    /// each get what is left of it, capped by the endpoint's command_timeout and
    /// connect_timeout and never less than 100 ms (a zero wait keeps those timeouts). When a
    /// health check fails, every other idle connection is dropped unchecked (the server went
    /// away while they idled).
    [[nodiscard]] pooled_connection borrow(std::chrono::milliseconds wait);

    /// Borrows a connection to the server that serves `key`: on a Cluster endpoint the
    /// master of the key's hash slot (see hash_slot()), elsewhere the one server, as borrow().
    /// Every key of one redcoord primitive shares a hash tag, so its name routes them all.
    /// @throws as borrow(), and on a cluster cluster_unavailable when no node can tell the
    ///         slot map or no master serves the slot, invalid_argument when the seed nodes
    ///         are not cluster nodes.
    [[nodiscard]] pooled_connection borrow_for(std::string_view key);
    /// Same, with an explicit wait for a free connection (zero: do not wait).
    [[nodiscard]] pooled_connection borrow_for(std::string_view key,
                                               std::chrono::milliseconds wait);

    /// Borrow, run one command, return. On a cluster the command goes to the master of its
    /// first key (EVAL's first key after numkeys; else its first argument). Same errors as
    /// borrow_for() and connection::command().
    reply command(std::initializer_list<std::string_view> argv);
    /// Same, for owned arguments.
    reply command(const std::vector<std::string>& argv);

    /// Closes all idle connections (for example after a failover); leased ones close on return.
    void clear_idle() noexcept;

    /// A snapshot of the pool's counters (takes the pool's mutex; sends nothing).
    [[nodiscard]] pool_stats stats() const;
    /// The endpoint the pool connects to.
    [[nodiscard]] const endpoint& where() const noexcept;
    /// The options the pool was made with.
    [[nodiscard]] const pool_options& options() const noexcept;

    /// The runtime this pool belongs to (never null); primitives built on the pool share its
    /// timer thread, callback thread and pub/sub links.
    [[nodiscard]] const std::shared_ptr<redcoord::runtime>& runtime() const noexcept;

    /// The cluster's slot map as this pool last learned it (asked for first when due), or
    /// null when the endpoint is not a cluster.
    /// @throws as borrow_for() on a cluster whose map cannot be learned.
    [[nodiscard]] std::shared_ptr<const cluster_map> slot_map() const;

    /// The resolver behind a Sentinel endpoint (shared with the pool), else null. Use it to
    /// follow failovers (`on_master_changed()`) or list replicas.
    [[nodiscard]] std::shared_ptr<sentinel_resolver> sentinel() const noexcept;

private:
    friend struct detail::pool_access;
    friend class pooled_connection;
    // Fan-out's two halves: an idle connection if one is free now (else empty), and a lease
    // that ends by `within`: an idle connection as soon as one is returned, else a new one
    // when a slot is free, opened by one background dial per pool with the endpoint's whole
    // connect_timeout (joined by the destructor). A dial still running when `within` ends
    // throws detail::still_connecting (a timeout_error) and its connection goes idle for the
    // next caller. All leased: waits up to min(within, borrow_timeout), then pool_exhausted
    // (nothing sent; not the node's fault). A new connect is refused at once while a recent
    // failure's backoff runs so a dead node is not re-dialled on every fan-out (with
    // timeout_error when that failure was a timeout, so a slow node is not reported as a
    // dead one).
    pooled_connection take_idle() noexcept;
    // borrow() and borrow(wait): `budget` makes the health check and the connect share `wait`.
    pooled_connection borrow_within(std::chrono::milliseconds wait, bool budget);
    // On a cluster, the lease is on the master of `route_key`'s slot (any master when empty).
    pooled_connection borrow_bounded(std::chrono::milliseconds within,
                                     std::string_view route_key = {});
    // Starts the background dial when a borrow_bounded() would (no idle connection, a free
    // slot, no dial running, no backoff), without waiting: a fan-out prepares every node it
    // needs first, so their connects overlap while it then waits for each in turn.
    void prepare() noexcept;
    void start_dial(std::unique_lock<std::mutex>& lk);
    // Called with each error reply a pool-level call (command(), script::run(pool)) got on
    // `c`, a connection of this pool: a READONLY drops `c` and the idle connections and, with
    // Sentinel, reports the address to the resolver.
    void reply_error_seen(connection& c, const reply_error& e) noexcept;
    struct state;
    std::shared_ptr<state> state_;
    // logs the failovers this pool follows (Sentinel)
    boost::signals2::scoped_connection failover_;
};

}  // namespace redcoord

REDCOORD_API_END
