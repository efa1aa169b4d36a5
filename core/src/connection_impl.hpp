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
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord {

struct connection::impl {
    endpoint ep;
    redisContext* ctx = nullptr;
    bool poisoned = false;
    // Replies still owed by the server for commands whose caller stopped waiting (a fan-out
    // that decided at quorum); the next reader skips them before reading its own.
    unsigned stale_replies = 0;
    // SHA1s of scripts this connection has seen run: the server's cache has them for the
    // connection's whole life (a restart or failover breaks the connection), except after
    // SCRIPT FLUSH, which a NOSCRIPT reply reveals and which empties this list.
    std::vector<std::string> known_scripts;
    std::chrono::milliseconds socket_timeout{-1};
    std::chrono::steady_clock::time_point last_used = std::chrono::steady_clock::now();

    impl(const endpoint& e, std::chrono::milliseconds connect_timeout);
    ~impl();
    impl(const impl&) = delete;
    impl& operator=(const impl&) = delete;

    void set_timeout(std::chrono::milliseconds t);
    void append(std::span<const std::string_view> argv);
    // Appends a command already in RESP form (see formatted_command).
    void append_formatted(std::string_view resp);
    // Blocking read of the next reply, skipping stale ones; transport failures throw and poison.
    reply read_reply();
    // Takes ownership of one hiredis reply: converted, or nullopt when it was a stale reply
    // being skipped. A reply that cannot be converted poisons the connection.
    std::optional<reply> adopt(void* raw);
    // Writes everything hiredis has buffered (poll-driven callers: fan-out, subscriber).
    void flush();
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
    [[noreturn]] void throw_handshake_error(std::string_view verb, const std::string& text) const;
    // A failed send()/recv() of our own (not through hiredis): `kind` REDIS_ERR_IO or
    // REDIS_ERR_EOF, then as fail().
    [[noreturn]] void fail_io(int kind, int saved_errno, std::string_view during);
    [[nodiscard]] std::string where() const { return ep.to_string(); }
    [[nodiscard]] bool knows_script(std::string_view sha) const noexcept;
    void learned_script(const std::string& sha);
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
    static connection make(std::unique_ptr<connection::impl> i) noexcept { return connection(std::move(i)); }
    static std::unique_ptr<connection::impl> release(connection& c) noexcept { return std::move(c.impl_); }
};

// Opens a connection whose handshake is bounded by `connect_timeout` instead of the endpoint's.
connection open_connection(const endpoint& ep, std::chrono::milliseconds connect_timeout);

reply convert_reply(const redisReply* r);

// The typed error for a hiredis context failure, with the context's message.
[[noreturn]] void throw_context_error(const redisContext* ctx, int saved_errno, const std::string& where,
                                      std::string_view during);

}  // namespace detail
}  // namespace redcoord
