#pragma once
/// @file
/// Least-privilege Redis ACL users for redcoord: what a part needs (commands, key patterns,
/// channel patterns) and the `ACL SETUSER` line that grants exactly that.
///
/// Each part derives its needs from its own scripts and key naming (`redcoord/lock/acl.hpp`,
/// `redcoord/election/acl.hpp`, `redcoord/signaling/acl.hpp`, `redcoord/queue/acl.hpp`,
/// `redcoord/jobs/acl.hpp`; cluster_acl_needs() for a Redis Cluster); the
/// CLI prints them with `redcoord acl-rules`. A user missing one of them gets permission_error
/// naming the command (redcoord/core/errors.hpp). Create the user on every server the part
/// talks to (masters, replicas its pub/sub links listen on, every Redlock node): ACL users are
/// not replicated.

#include <redcoord/core/keys.hpp>

#include <initializer_list>
#include <redcoord/core/export.hpp>
#include <string>
#include <string_view>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

class script;

/// What an ACL user must be allowed for one redcoord part.
///
/// Thread-safety: a plain value.
struct acl_needs {
    /// Commands in lower case as ACL names them (`evalsha`, `pubsub|channels`), each once.
    std::vector<std::string> commands;
    /// Key glob patterns (`~` rules), each once.
    std::vector<std::string> key_patterns;
    /// Channel glob patterns (`&` rules), each once; they cover pattern subscriptions too
    /// (Redis matches a PSUBSCRIBE pattern literally against them).
    std::vector<std::string> channel_patterns;

    /// Adds what `other` needs that this does not yet hold, keeping the order. Returns *this.
    acl_needs& merge(const acl_needs& other);
    /// Adds commands (any case; stored in lower case), skipping those already held.
    acl_needs& allow_commands(std::initializer_list<std::string_view> cmds);
    /// Adds the commands a script needs: EVAL and EVALSHA, and every command it calls
    /// (script::calls()): Redis checks those against the caller's user too.
    acl_needs& allow_script(const script& s);
};

/// What every connection of a connection_pool needs: PING (handshake and idle health check),
/// ROLE (the master check of a Sentinel endpoint, and finding a master's replicas for the
/// pub/sub links), and SELECT when `db` is not 0. AUTH and HELLO need no permission. ROLE is
/// `@admin` `@dangerous`: a user refused it still works, its master check falling back to HELLO
/// and INFO, its replica discovery to INFO replication (both refused: the pub/sub links stay
/// on the master, with a warning in the log); INFO, `@dangerous` too, is not listed.
[[nodiscard]] acl_needs connection_acl_needs(int db = 0);

/// What a pub/sub link needs: SUBSCRIBE, UNSUBSCRIBE (and PSUBSCRIBE, PUNSUBSCRIBE with
/// `patterns`) and PING (its health check), plus connection_acl_needs(db).
[[nodiscard]] acl_needs pubsub_acl_needs(bool patterns = false, int db = 0);

/// What a part's needs (`part`, from its acl_needs function) become on a Redis Cluster: the
/// slot map (`CLUSTER SHARDS`, or `CLUSTER SLOTS` before 7.0) and `ASKING` for every part, and
/// the sharded forms of its pub/sub: `SSUBSCRIBE SUNSUBSCRIBE` when it subscribes, `SPUBLISH`
/// when it publishes (scripts made with cluster_publish::sharded, the signal hub),
/// `PUBSUB SHARDCHANNELS` when it lists channels (unicast). Keys and channels are the same
/// patterns (Redis checks sharded channels against them). The standalone commands stay, so one
/// user serves both kinds of deployment. Source: the Redis docs of ACL and of sharded pub/sub.
/// Thread-safe (a function of its argument).
[[nodiscard]] acl_needs cluster_acl_needs(acl_needs part);
/// `prefix` with its glob characters escaped, followed by `rest` (a glob, for example `lock:*`):
/// the pattern of every key or channel a part names under `prefix` (see make_key()).
[[nodiscard]] std::string prefixed_pattern(std::string_view prefix, std::string_view rest);

/// The `ACL SETUSER` command that grants `user` exactly `needs`, as one line for redis-cli:
/// `ACL SETUSER <user> on resetkeys resetchannels -@all +<cmd>... ~<key pattern>...
/// &<channel pattern>...`. It sets no password: add `>password` (or run
/// `ACL SETUSER <user> >password` once); running the line again keeps the password and
/// replaces commands, keys and channels. Arguments holding spaces, quotes, backslashes or
/// control characters are double-quoted with redis-cli's escapes.
/// @throws invalid_argument for an empty user name, or a user name or pattern that holds a
///         space or control character (Redis ACL rules cannot hold one: a key prefix with a
///         space cannot be used with a least-privilege user).
[[nodiscard]] std::string format_acl_setuser(std::string_view user, const acl_needs& needs);

/// The words of that command, unquoted, for sending it with connection::command() (tests,
/// provisioning code). Same rules and errors as format_acl_setuser().
[[nodiscard]] std::vector<std::string> acl_setuser_argv(std::string_view user,
                                                        const acl_needs& needs);

}  // namespace redcoord

REDCOORD_API_END
