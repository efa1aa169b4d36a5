#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/script_argv.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/replication.hpp>

#include "connection_impl.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace redcoord {

std::size_t wait_replicas(connection& c, std::size_t replicas, std::chrono::milliseconds timeout) {
    if (timeout.count() <= 0) throw invalid_argument("wait_replicas: timeout must be > 0 ms");
    if (replicas == 0) throw invalid_argument("wait_replicas: replicas must be >= 1");
    const std::string n = std::to_string(replicas), t = std::to_string(timeout.count());
    const std::string_view argv[] = {"WAIT", n, t};
    // Zero command_timeout means "wait forever" for the connection; keep that meaning.
    const auto ct = c.where().command_timeout;
    auto r = c.command_for(ct.count() == 0 ? ct : timeout + ct, argv);
    auto acked = r.integer();
    return acked < 0 ? 0 : static_cast<std::size_t>(acked);
}

std::size_t replication_barrier(connection_pool& pool, std::size_t replicas,
                                std::chrono::milliseconds timeout, std::string_view key) {
    if (timeout.count() <= 0) throw invalid_argument("replication_barrier: timeout must be > 0 ms");
    if (replicas == 0) throw invalid_argument("replication_barrier: replicas must be >= 1");
    auto c = pool.borrow_for(key);
    // PUBLISH is propagated to replicas, so it moves this client's replication offset
    // past every write applied before it, without creating a key.
    (void)c->command({"PUBLISH", std::string(default_prefix) + "replication-barrier", ""});
    return wait_replicas(*c, replicas, timeout);
}

namespace {

std::chrono::milliseconds wait_deadline(const connection& c, std::chrono::milliseconds timeout) {
    // Zero command_timeout means "wait forever" for the connection; keep that meaning.
    const auto ct = c.where().command_timeout;
    return ct.count() == 0 ? ct : timeout + ct;
}

void check_wait_args(std::size_t replicas, std::chrono::milliseconds timeout, const char* who) {
    if (timeout.count() <= 0) throw invalid_argument(std::string(who) + ": timeout must be > 0 ms");
    if (replicas == 0) throw invalid_argument(std::string(who) + ": replicas must be >= 1");
}

// Writes `argv` and WAIT together, then reads the write's reply (command_timeout) and WAIT's
// (timeout + command_timeout): Redis answers the write before it blocks on WAIT. Error
// replies are returned, not thrown, so both are always consumed.
// `t` shortened to what is left before `until` (if any), at least 1 ms (zero means forever).
std::chrono::milliseconds clip(std::chrono::milliseconds t,
                               std::optional<std::chrono::steady_clock::time_point> until) {
    if (!until) return t;
    const auto left = std::max(
        std::chrono::milliseconds(1),
        std::chrono::ceil<std::chrono::milliseconds>(*until - std::chrono::steady_clock::now()));
    return t.count() == 0 ? left : std::min(t, left);
}

std::pair<reply, reply> send_with_wait(
    connection& c, std::span<const std::string_view> argv, std::size_t replicas,
    std::chrono::milliseconds timeout,
    std::optional<std::chrono::steady_clock::time_point> until = std::nullopt) {
    if (argv.empty()) throw invalid_argument("command_then_wait: empty command");
    if (c.poisoned())
        throw connection_error("connection to " + c.where().to_string() +
                               " is unusable after an earlier failure");
    auto& io = detail::connection_access::get(c);
    const std::string n = std::to_string(replicas), t = std::to_string(timeout.count());
    const std::string_view wait[] = {"WAIT", n, t};
    io.set_timeout(clip(c.where().command_timeout, until));
    io.append(argv);
    io.append(wait);
    reply first = io.read_reply();
    io.set_timeout(clip(wait_deadline(c, timeout), until));
    reply second = io.read_reply();
    io.set_timeout(c.where().command_timeout);
    return {std::move(first), std::move(second)};
}

// `sent`: the first word of the command written before WAIT, to name it in a refusal.
replicated_reply finish(std::pair<reply, reply> r, std::string_view sent) {
    if (r.first.is_error()) detail::throw_reply_error(r.first.text(), sent);
    if (r.second.is_error()) detail::throw_reply_error(r.second.text(), "WAIT");
    const auto acked = r.second.integer();
    return {std::move(r.first), acked < 0 ? 0 : static_cast<std::size_t>(acked)};
}

}  // namespace

replicated_reply command_then_wait(connection& c, std::span<const std::string_view> argv,
                                   std::size_t replicas, std::chrono::milliseconds timeout) {
    check_wait_args(replicas, timeout, "command_then_wait");
    return finish(send_with_wait(c, argv, replicas, timeout), argv.front());
}

namespace {
replicated_reply run_then_wait_unchecked(
    connection& c, const script& s, std::span<const std::string_view> keys,
    std::span<const std::string_view> args, std::size_t replicas, std::chrono::milliseconds timeout,
    std::optional<std::chrono::steady_clock::time_point> until = std::nullopt);
}  // namespace

replicated_reply run_then_wait(connection& c, const script& s,
                               std::span<const std::string_view> keys,
                               std::span<const std::string_view> args, std::size_t replicas,
                               std::chrono::milliseconds timeout) {
    check_wait_args(replicas, timeout, "run_then_wait");
    try {
        return run_then_wait_unchecked(c, s, keys, args, replicas, timeout);
    } catch (const permission_error&) {
        detail::rethrow_with_script(s);
    }
}

namespace detail {
replicated_reply run_then_wait_until(connection& c, const script& s,
                                     std::span<const std::string_view> keys,
                                     std::span<const std::string_view> args, std::size_t replicas,
                                     std::chrono::milliseconds timeout,
                                     std::chrono::steady_clock::time_point until) {
    check_wait_args(replicas, timeout, "run_then_wait");
    try {
        return run_then_wait_unchecked(c, s, keys, args, replicas, timeout, until);
    } catch (const permission_error&) {
        detail::rethrow_with_script(s);
    }
}
}  // namespace detail

namespace {
replicated_reply run_then_wait_unchecked(
    connection& c, const script& s, std::span<const std::string_view> keys,
    std::span<const std::string_view> args, std::size_t replicas, std::chrono::milliseconds timeout,
    std::optional<std::chrono::steady_clock::time_point> until) {
    auto views = [](const std::vector<std::string>& v) {
        return std::vector<std::string_view>(v.begin(), v.end());
    };
    const script& form = s.for_cluster(detail::connection_access::get(c).cluster_node);
    const auto sha = detail::script_command(form, true, keys, args);
    auto r = send_with_wait(c, views(sha), replicas, timeout, until);
    if (r.first.is_error() && is_noscript(r.first)) {
        const auto full = detail::script_command(form, false, keys, args);
        r = send_with_wait(c, views(full), replicas, timeout, until);
        return finish(std::move(r), "EVAL");
    }
    return finish(std::move(r), "EVALSHA");
}
}  // namespace

}  // namespace redcoord
