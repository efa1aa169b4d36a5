#pragma once
/// @file
/// A Lua script run with EVAL once per connection and EVALSHA after that (redis.io: EVAL,
/// EVALSHA, "Script cache").

#include <redcoord/core/connection.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/pool.hpp>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// How a script's own `redis.call('PUBLISH', ...)` calls travel on a Redis Cluster.
enum class cluster_publish {
    /// As written: classic pub/sub, which the cluster bus carries to every node.
    as_written,
    /// Sharded: on a connection to a cluster node the script runs in a second form whose
    /// `redis.call('PUBLISH', ...)` / `redis.pcall('PUBLISH', ...)` calls (the command name a
    /// quoted literal) are `SPUBLISH`, so the message stays on the channel's shard, where
    /// redcoord's listeners on a cluster subscribe (SSUBSCRIBE). The channel must hash to
    /// the script's slot (the `{tag}` of its keys). Needs Redis 7.0 on a cluster; on one
    /// server or Sentinel the source runs as written. Source: redis.io, "Sharded Pub/Sub".
    sharded,
};

/// A Lua script: its source and SHA1, computed once at construction.
///
/// Each connection remembers which scripts it has seen run. On a connection that has not,
/// run() sends `EVAL source numkeys keys... args...`, which loads the script and runs it in
/// one round trip; after that it sends `EVALSHA sha ...`. The server's cache outlives the
/// connection's view of it except after SCRIPT FLUSH (a restart or failover breaks the
/// connection, and a new connection starts with EVAL): a NOSCRIPT reply empties the
/// connection's list and run() retries once with EVAL. Keys and values always travel as
/// KEYS/ARGV, never spliced into the source.
///
/// @par Thread safety
/// Immutable after construction; share freely.
///
/// @par Errors
/// The constructor throws invalid_argument for an empty source; run() throws as
/// connection::command() and reply_error for a script error.
///
/// @par Cost
/// run(): one EVALSHA round trip; on a connection whose server has not cached the script
/// (NOSCRIPT), one more round trip with EVAL.
class script {
public:
    /// @param source the Lua source.
    /// @param publish how its PUBLISH calls travel on a Redis Cluster (see cluster_publish).
    /// @throws invalid_argument when `source` is empty.
    explicit script(std::string source, cluster_publish publish = cluster_publish::as_written);

    /// The form that runs on a cluster node (`cluster` true: the sharded form when this
    /// script was made with cluster_publish::sharded and publishes) or elsewhere (itself).
    /// For callers that build EVAL/EVALSHA commands themselves; run() and send() choose by
    /// the connection.
    [[nodiscard]] const script& for_cluster(bool cluster) const noexcept {
        return cluster && sharded_ ? *sharded_ : *this;
    }

    /// The Lua source, as given.
    [[nodiscard]] const std::string& source() const noexcept { return source_; }
    /// Lower-case hex SHA1 of the source, as Redis computes it.
    [[nodiscard]] const std::string& sha1() const noexcept { return sha1_; }

    /// Runs the script on `c`. Same errors as connection::command (a Lua error surfaces as
    /// reply_error with the server's text).
    reply run(connection& c, std::span<const std::string_view> keys,
              std::span<const std::string_view> args) const;
    /// Same, with the reply awaited up to `timeout` (milliseconds; zero waits forever, as
    /// connection::command_for) instead of the endpoint's command_timeout: for callers whose
    /// own deadline is shorter (a timed lock attempt).
    reply run_for(connection& c, std::chrono::milliseconds timeout,
                  std::span<const std::string_view> keys,
                  std::span<const std::string_view> args) const;
    /// Same, with literal lists: `s.run(c, {key}, {token, ttl})`.
    reply run(connection& c, std::initializer_list<std::string_view> keys,
              std::initializer_list<std::string_view> args) const;
    /// Borrows from `pool`, runs, returns the connection. A `READONLY` reply is handled as
    /// connection_pool::command() handles it (connections dropped, Sentinel re-asked).
    /// @throws as connection_pool::borrow() and run() above. Thread-safe as the pool.
    reply run(connection_pool& pool, std::initializer_list<std::string_view> keys,
              std::initializer_list<std::string_view> args) const;
    /// The same with arguments built at run time (a variable number of them).
    reply run(connection_pool& pool, std::span<const std::string_view> keys,
              std::span<const std::string> args) const;

    /// Sends the script on `c` without waiting for its reply (pipelining): the reply, error
    /// or not, is read and discarded by the connection's next reader, before its own. For
    /// writes whose outcome the caller does not need, such as a best-effort lock release;
    /// the command reaches the server in order with whatever `c` sends next.
    ///
    /// Always sent as EVAL with the source: an EVALSHA would not run after a SCRIPT FLUSH,
    /// and only a later reader of `c` could notice and re-run it, so a connection that idles
    /// would never run it (a lock release lost until the key's TTL). The server hashes the
    /// source and runs its cached compiled form, so the cost is the source's bytes on the
    /// wire.
    ///
    /// On a connection of a `redis-cluster://` pool the reply is read before send() returns
    /// (one round trip), and discarded, error or not: a slot moved since the pool read its
    /// map answers MOVED or ASK, which only a waiting reader can follow to the slot's owner
    /// (as connection::command() does), and TRYAGAIN, which it retries until the endpoint's
    /// command_timeout.
    /// @throws connection_error when `c` is poisoned; timeout_error / connection_error when
    ///         the write fails (the connection is then poisoned); on a cluster also when the
    ///         reply is lost, and cluster_unavailable as connection::command().
    void send(connection& c, std::span<const std::string_view> keys,
              std::span<const std::string_view> args) const;
    /// Borrows from `pool`, sends as above, returns the connection (its next user skips the
    /// reply). Same errors as borrow() and send(connection&, ...).
    void send(connection_pool& pool, std::initializer_list<std::string_view> keys,
              std::initializer_list<std::string_view> args) const;

    /// The Redis commands the source calls with a literal name (`redis.call('GET', ...)`,
    /// `redis.pcall("SET", ...)`), upper case, in order of first appearance, each once: what
    /// an ACL user running the script needs besides EVAL/EVALSHA.
    [[nodiscard]] std::vector<std::string> calls() const;

private:
    reply run_on(connection_pool& pool, std::span<const std::string_view> keys,
                 std::span<const std::string_view> args) const;
    reply run_unchecked(connection& c, std::chrono::milliseconds timeout,
                        std::span<const std::string_view> keys,
                        std::span<const std::string_view> args) const;
    // EVALSHA or EVAL for `c` (see the class comment); the views point into this script,
    // `keys`, `args` and `nkeys`.
    std::vector<std::string_view> argv_for(const connection& c,
                                           std::span<const std::string_view> keys,
                                           std::span<const std::string_view> args,
                                           std::string& nkeys) const;

    std::string source_;
    std::string sha1_;
    std::shared_ptr<const script> sharded_;  // cluster_publish::sharded's form, if it publishes
};

namespace detail {
/// Rethrows the exception being handled; a permission_error for a refusal inside `s` is
/// rethrown with the commands `s` calls appended (Redis 7.0 does not name the one refused).
/// Call only from a catch block.
[[noreturn]] void rethrow_with_script(const script& s);
}  // namespace detail

/// True when `e` is Redis's NOSCRIPT error (the script is not in the server's cache).
[[nodiscard]] bool is_noscript(const reply& e) noexcept;

}  // namespace redcoord

REDCOORD_API_END
