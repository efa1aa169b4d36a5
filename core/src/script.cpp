#include "connection_impl.hpp"
#include "pool_access.hpp"

#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/script_argv.hpp>
#include <redcoord/core/detail/sha1.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/script.hpp>

#include <algorithm>
#include <cctype>

namespace redcoord {

bool is_noscript(const reply& e) noexcept {
    return e.is_error() && e.text().rfind("NOSCRIPT", 0) == 0;
}

namespace {
// `source` with each PUBLISH whose name is a quoted literal of redis.call/pcall made SPUBLISH.
std::string sharded_source(std::string_view source, bool& changed) {
    std::string out;
    changed = false;
    for (;;) {
        const auto at = source.find("PUBLISH");
        if (at == std::string_view::npos) break;
        const bool quoted = at > 0 && (source[at - 1] == '\'' || source[at - 1] == '"') &&
                            at + 7 < source.size() && source[at + 7] == source[at - 1];
        out.append(source.substr(0, at));
        if (quoted) {
            out.push_back('S');
            changed = true;
        }
        out.append("PUBLISH");
        source.remove_prefix(at + 7);
    }
    out.append(source);
    return out;
}
}  // namespace

script::script(std::string source, cluster_publish publish) : source_(std::move(source)) {
    if (source_.empty()) throw invalid_argument("script source must not be empty");
    sha1_ = detail::sha1_hex(source_);
    if (publish == cluster_publish::sharded) {
        bool changed = false;
        auto s = sharded_source(source_, changed);
        if (changed) sharded_ = std::make_shared<const script>(std::move(s));
    }
}

namespace detail {

std::vector<std::string_view> script_argv(const script& s, bool by_sha,
                                          std::span<const std::string_view> keys,
                                          std::span<const std::string_view> args,
                                          std::string& nkeys) {
    nkeys = std::to_string(keys.size());
    std::vector<std::string_view> v;
    v.reserve(3 + keys.size() + args.size());
    v.emplace_back(by_sha ? "EVALSHA" : "EVAL");
    v.push_back(by_sha ? s.sha1() : s.source());
    v.push_back(nkeys);
    v.insert(v.end(), keys.begin(), keys.end());
    v.insert(v.end(), args.begin(), args.end());
    return v;
}

std::vector<std::string> script_command(const script& s, bool by_sha,
                                        std::span<const std::string_view> keys,
                                        std::span<const std::string_view> args) {
    std::string nkeys;
    const auto v = script_argv(s, by_sha, keys, args, nkeys);
    return {v.begin(), v.end()};
}

}  // namespace detail

std::vector<std::string_view> script::argv_for(const connection& c,
                                               std::span<const std::string_view> keys,
                                               std::span<const std::string_view> args,
                                               std::string& nkeys) const {
    // EVALSHA only where this connection has seen the script run; otherwise EVAL, which
    // loads it and runs it in one round trip (a first EVALSHA would cost a NOSCRIPT trip).
    const bool known =
        detail::connection_access::get(const_cast<connection&>(c)).knows_script(sha1_);
    return detail::script_argv(*this, known, keys, args, nkeys);
}

reply script::run(connection& c, std::span<const std::string_view> keys,
                  std::span<const std::string_view> args) const {
    return run_for(c, detail::connection_access::get(c).ep.command_timeout, keys, args);
}

std::vector<std::string> script::calls() const {
    std::vector<std::string> out;
    for (std::string_view rest = source_;;) {
        const auto at = rest.find("redis.");
        if (at == std::string_view::npos) return out;
        rest.remove_prefix(at + 6);
        for (std::string_view fn : {"call(", "pcall("}) {
            if (rest.substr(0, fn.size()) != fn) continue;
            auto arg = rest.substr(fn.size());
            while (!arg.empty() && arg.front() == ' ') arg.remove_prefix(1);
            if (arg.empty() || (arg.front() != '\'' && arg.front() != '"')) break;
            const auto end = arg.find(arg.front(), 1);
            if (end == std::string_view::npos) break;
            std::string name(arg.substr(1, end - 1));
            for (auto& ch : name)
                ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
            if (std::find(out.begin(), out.end(), name) == out.end())
                out.push_back(std::move(name));
            break;
        }
    }
}

namespace detail {

void rethrow_with_script(const script& s) {
    try {
        throw;
    } catch (const permission_error& e) {
        const std::string_view what = e.what();
        // Redis 7.0 does not name a command refused inside a script: list what the script calls.
        if (what.find("inside the script") == std::string_view::npos) throw;
        std::string calls;
        for (const auto& n : s.calls()) calls.append(calls.empty() ? "" : ", ").append(n);
        throw permission_error(e.command(),
                               std::string(what) + " [the script calls " + calls + "]");
    }
}

}  // namespace detail

reply script::run_for(connection& c, std::chrono::milliseconds timeout,
                      std::span<const std::string_view> keys,
                      std::span<const std::string_view> args) const {
    try {
        return run_unchecked(c, timeout, keys, args);
    } catch (const permission_error&) {
        detail::rethrow_with_script(*this);
    }
}

reply script::run_unchecked(connection& c, std::chrono::milliseconds timeout,
                            std::span<const std::string_view> keys,
                            std::span<const std::string_view> args) const {
    auto& ci = detail::connection_access::get(c);
    if (sharded_ && ci.cluster_node) return sharded_->run_unchecked(c, timeout, keys, args);
    std::string nkeys;
    auto argv = argv_for(c, keys, args, nkeys);
    if (argv[0] == "EVALSHA") {
        try {
            return c.command_for(timeout, std::span<const std::string_view>(argv));
        } catch (const reply_error& e) {
            if (std::string_view(e.what()).rfind("NOSCRIPT", 0) != 0) throw;
        }
        // SCRIPT FLUSH since we learned it (the reply emptied the connection's list): EVAL.
        argv = argv_for(c, keys, args, nkeys);
    }
    reply r = c.command_for(timeout, std::span<const std::string_view>(argv));
    ci.learned_script(sha1_);
    return r;
}

void script::send(connection& c, std::span<const std::string_view> keys,
                  std::span<const std::string_view> args) const {
    auto& ci = detail::connection_access::get(c);
    if (sharded_ && ci.cluster_node) return sharded_->send(c, keys, args);
    if (ci.poisoned)
        throw connection_error("connection to " + ci.where() +
                               " is unusable after an earlier failure");
    if (ci.cluster_node) {
        // Not detached on a cluster: a slot may have moved since the pool read its map, and
        // only a reader that waits can follow the MOVED / ASK to the owner (and teach the
        // pool its map) or retry a TRYAGAIN. A detached reply is read by the connection's
        // next user, maybe never, always on this node: the write (a release) would be lost
        // and its key kept for its TTL. The price is one round trip per send on a cluster.
        try {
            (void)run_unchecked(c, ci.ep.command_timeout, keys, args);
        } catch (const reply_error&) {
            // Discarded, as a detached reply would be.
        }
        return;
    }
    // EVAL, never EVALSHA: a flushed script cache cannot refuse it, so it runs whether or not
    // anyone reads this connection again (a NOSCRIPT could only be cured by a later reader).
    std::string nkeys;
    const auto argv = detail::script_argv(*this, false, keys, args, nkeys);
    ci.set_timeout(ci.ep.command_timeout);
    ci.append(argv);
    ci.owe_last_reply();  // the next reader skips it
    ci.flush();
    // An EVAL we sent loads the script, so EVALSHA is safe for whatever follows on this connection.
    ci.learned_script(sha1_);
}

void script::send(connection_pool& pool, std::initializer_list<std::string_view> keys,
                  std::initializer_list<std::string_view> args) const {
    auto c = keys.size() ? pool.borrow_for(*keys.begin()) : pool.borrow();
    send(*c, std::span<const std::string_view>(keys.begin(), keys.size()),
         std::span<const std::string_view>(args.begin(), args.size()));
}

reply script::run(connection& c, std::initializer_list<std::string_view> keys,
                  std::initializer_list<std::string_view> args) const {
    return run(c, std::span<const std::string_view>(keys.begin(), keys.size()),
               std::span<const std::string_view>(args.begin(), args.size()));
}

reply script::run(connection_pool& pool, std::initializer_list<std::string_view> keys,
                  std::initializer_list<std::string_view> args) const {
    return run_on(pool, std::span<const std::string_view>(keys.begin(), keys.size()),
                  std::span<const std::string_view>(args.begin(), args.size()));
}

reply script::run(connection_pool& pool, std::span<const std::string_view> keys,
                  std::span<const std::string> args) const {
    const std::vector<std::string_view> views(args.begin(), args.end());
    return run_on(pool, keys, views);
}

reply script::run_on(connection_pool& pool, std::span<const std::string_view> keys,
                     std::span<const std::string_view> args) const {
    auto c = keys.empty() ? pool.borrow() : pool.borrow_for(keys.front());
    try {
        return run(*c, keys, args);
    } catch (const reply_error& e) {
        detail::pool_access::reply_error_seen(pool, *c, e);
        throw;
    }
}

}  // namespace redcoord
