#pragma once
// Private to core: the hiredis-backed state behind redcoord::connection, shared with the
// fan-out and subscriber code that drive sockets directly.

#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>

// hiredis.h pulls in sds.h (the type of its output buffer) outside its extern "C" block;
// including sds.h first, wrapped, gives its functions C linkage.
extern "C" {
#include <hiredis/sds.h>
}
#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord {
namespace detail {
class tls_stream;

// What a connection to a Redis Cluster node does with an error reply that may be a
// redirection or a refusal to retry (MOVED, ASK, TRYAGAIN, CLUSTERDOWN); see cluster_router.
class redirect_follower {
public:
    virtual ~redirect_follower() = default;
    // `r`, an error reply to `argv` sent on `from` with `timeout`: the reply to use instead
    // (the redirection followed, the refusal retried until `timeout` ran out), or nullopt to
    // report `r` as it is. @throws cluster_unavailable when retries ran out, and what a
    // borrow or a command on the target node throws.
    virtual std::optional<reply> follow(connection::impl& from, const reply& r,
                                        std::chrono::milliseconds timeout,
                                        std::span<const std::string_view> argv) = 0;
    // An error reply the caller handles itself (a pipelined one): learn from a MOVED.
    virtual void seen(const connection::impl& from, const reply& r) noexcept = 0;
};
}  // namespace detail

struct connection::impl {
    endpoint ep;
    redisContext* ctx = nullptr;
    // Set for a TLS endpoint: the bytes go through it, and hiredis only formats and parses.
    std::unique_ptr<detail::tls_stream> tls;
    bool poisoned = false;
    // A reply the server still owes for a command whose sender stopped waiting for it
    // (script::send off a cluster, a fan-out that decided at quorum or was detached): the
    // reader that meets it skips it (on a cluster node, after showing the router its error).
    struct owed_reply {
        // The reply's place in this connection's reply stream: replies arrive in the order
        // the commands were sent, so it is the count of commands sent before it.
        std::uint64_t seq = 0;
        // RESP of the script as EVAL, re-sent if the reply is NOSCRIPT: the sender could not be
        // told that its write did not run (a release). Empty: skip whatever the reply is.
        std::string eval_on_noscript;
    };
    std::deque<owed_reply> owed;
    // Counts that place owed replies among the readers' own; one command is one reply (a
    // connection in pub/sub mode breaks that, and never owes a reply).
    std::uint64_t commands_sent = 0;
    std::uint64_t replies_read = 0;
    // SHA1s of scripts this connection has seen run: the server's cache has them for the
    // connection's whole life (a restart or failover breaks the connection), except after
    // SCRIPT FLUSH, which a NOSCRIPT reply reveals and which empties this list.
    std::vector<std::string> known_scripts;
    std::chrono::milliseconds socket_timeout{-1};
    // Set on a connection a cluster pool opened; weak, so that idle connections in the
    // router's node pools do not keep the router alive.
    std::weak_ptr<detail::redirect_follower> cluster;
    // Opened by a cluster pool (also once its router is gone): scripts pick their sharded form.
    bool cluster_node = false;
    // Between a MULTI and its EXEC/DISCARD sent through command(): a redirection of a queued
    // command must not be followed outside the transaction.
    bool in_multi = false;
    std::chrono::steady_clock::time_point last_used = std::chrono::steady_clock::now();

    impl(const endpoint& e, std::chrono::milliseconds connect_timeout);
    ~impl();
    impl(const impl&) = delete;
    impl& operator=(const impl&) = delete;

    void set_timeout(std::chrono::milliseconds t);
    void append(std::span<const std::string_view> argv);
    // Appends a command already in RESP form (see formatted_command).
    void append_formatted(std::string_view resp);
    // The reply to the command appended last is no one's: readers skip it. With
    // `eval_on_noscript` (see owed_reply) a NOSCRIPT there re-runs the script. If the entry
    // cannot be recorded, the stream can no longer be kept in step: the connection is poisoned.
    void owe_last_reply(std::string eval_on_noscript = {}) noexcept;
    // Blocking read of the next reply, skipping stale ones; transport failures throw and poison.
    reply read_reply();
    // Takes ownership of one hiredis reply: converted, or nullopt when it was a stale reply
    // being skipped. A reply that cannot be converted poisons the connection.
    std::optional<reply> adopt(void* raw);
    // Writes everything hiredis has buffered (poll-driven callers: fan-out, subscriber).
    void flush();
    // Writes what the socket takes of hiredis's buffer; with `may_block`, waits (up to the
    // socket timeout) until all of it is out. False when some is left (never with may_block).
    // MSG_NOSIGNAL: a library must not raise SIGPIPE in its host process. Failures throw and poison.
    bool send_buffered(bool may_block);
    // One read() from a socket poll() reported readable; each complete reply goes to
    // `on_reply` (stale ones skipped) until it returns false. Failures throw and poison.
    void read_ready(const std::function<bool(reply&)>& on_reply);
    // As read_ready(), but never blocks: one recv(MSG_DONTWAIT) instead of a poll() and a
    // read(). Returns false when nothing had arrived. @throws as read_ready().
    bool read_if_ready(const std::function<bool(reply&)>& on_reply);
    // Hands every complete reply already in hiredis's buffer to `on_reply` (false: stop).
    void dispatch_buffered(const std::function<bool(reply&)>& on_reply);
    [[noreturn]] void fail(std::string_view during);
    // The typed error for an error reply `text` to handshake command `verb` (AUTH, SELECT, PING).
    // A failed send()/recv() of our own (not through hiredis): `kind` REDIS_ERR_IO or
    // REDIS_ERR_EOF, then as fail().
    [[noreturn]] void fail_io(int kind, int saved_errno, std::string_view during);
    // TLS: moves what the session has decrypted into hiredis's reader. With `block`, waits (up
    // to the socket timeout) until at least some arrives. True when something was fed.
    bool tls_fill(bool block);
    // A TLS failure on the link: poisons and throws tls_error with OpenSSL's `reason`.
    [[noreturn]] void fail_tls(std::string_view during, const std::string& reason);
    [[nodiscard]] std::string where() const { return ep.to_string(); }
    // Skips the owed reply at the head of `owed`, re-running its script if it was NOSCRIPT.
    void skip_owed(bool noscript);
    [[nodiscard]] bool knows_script(std::string_view sha) const noexcept;
    void learned_script(const std::string& sha);
    /// The EVAL that taught it was refused (ACL): the script was never loaded by it.
    void forgot_script(std::string_view sha) noexcept;
};

namespace detail {

// One command encoded to RESP once by hiredis, to be appended to many connections (a
// fan-out to N nodes formats its command once instead of N times).
class formatted_command {
public:
    explicit formatted_command(std::span<const std::string_view> argv);
    ~formatted_command();
    formatted_command(const formatted_command&) = delete;
    formatted_command& operator=(const formatted_command&) = delete;
    [[nodiscard]] std::string_view resp() const noexcept { return {buf_, len_}; }

private:
    sds buf_ = nullptr;
    std::size_t len_ = 0;
};

struct connection_access {
    static connection::impl& get(connection& c) { return *c.impl_; }
    static connection make(std::unique_ptr<connection::impl> i) noexcept {
        return connection(std::move(i));
    }
    static std::unique_ptr<connection::impl> release(connection& c) noexcept {
        return std::move(c.impl_);
    }
};

// Opens a connection whose handshake is bounded by `connect_timeout` instead of the endpoint's.
connection open_connection(const endpoint& ep, std::chrono::milliseconds connect_timeout);

reply convert_reply(const redisReply* r);

// `argv` as one RESP command, as hiredis would format it, in a string the caller owns (an
// owed reply keeps its EVAL for as long as the connection needs it).
std::string encode_command(std::span<const std::string_view> argv);

// The typed error for a hiredis context failure, with the context's message.
[[noreturn]] void throw_context_error(const redisContext* ctx, int saved_errno,
                                      const std::string& where, std::string_view during);

}  // namespace detail
}  // namespace redcoord
