#include <redcoord/core/acl.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/script.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace redcoord {

namespace {

void add_unique(std::vector<std::string>& to, std::string v) {
    if (std::find(to.begin(), to.end(), v) == to.end()) to.push_back(std::move(v));
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// redis-cli splits a line on spaces and reads "..." with C-like escapes (sdssplitargs).
std::string quoted(std::string_view arg) {
    const bool plain = !arg.empty() && std::none_of(arg.begin(), arg.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u <= ' ' || u == 0x7f || c == '"' || c == '\'' || c == '\\';
    });
    if (plain) return std::string(arg);
    std::string out = "\"";
    for (char c : arg) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (u < ' ' || u == 0x7f) {
            char buf[5];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace

acl_needs& acl_needs::merge(const acl_needs& other) {
    for (const auto& c : other.commands) add_unique(commands, c);
    for (const auto& k : other.key_patterns) add_unique(key_patterns, k);
    for (const auto& ch : other.channel_patterns) add_unique(channel_patterns, ch);
    return *this;
}

acl_needs& acl_needs::allow_commands(std::initializer_list<std::string_view> cmds) {
    for (auto c : cmds) add_unique(commands, lower(c));
    return *this;
}

acl_needs& acl_needs::allow_script(const script& s) {
    allow_commands({"eval", "evalsha"});
    for (const auto& c : s.calls()) {
        // ACL names a subcommand as `command|subcommand`; the scripts call PUBSUB CHANNELS.
        if (lower(c) == "pubsub")
            add_unique(commands, "pubsub|channels");
        else
            add_unique(commands, lower(c));
    }
    return *this;
}

acl_needs connection_acl_needs(int db) {
    acl_needs n;
    n.allow_commands({"ping", "role"});
    if (db != 0) n.allow_commands({"select"});
    return n;
}

acl_needs pubsub_acl_needs(bool patterns, int db) {
    acl_needs n = connection_acl_needs(db);
    n.allow_commands({"subscribe", "unsubscribe"});
    if (patterns) n.allow_commands({"psubscribe", "punsubscribe"});
    return n;
}

acl_needs cluster_acl_needs(acl_needs part) {
    const auto has = [&](std::string_view c) {
        return std::find(part.commands.begin(), part.commands.end(), c) != part.commands.end();
    };
    // The sharded forms: a cluster's links subscribe with SSUBSCRIBE, scripts made with
    // cluster_publish::sharded and the signal hub publish with SPUBLISH, and unicast asks the
    // slot's shard with PUBSUB SHARDCHANNELS. Patterns have no sharded form (refused on a
    // cluster), so PSUBSCRIBE needs nothing more.
    const bool subscribes = has("subscribe"), publishes = has("publish"),
               lists = has("pubsub|channels");
    part.allow_commands({"cluster|shards", "cluster|slots", "asking"});
    if (subscribes) part.allow_commands({"ssubscribe", "sunsubscribe"});
    if (publishes) part.allow_commands({"spublish"});
    if (lists) part.allow_commands({"pubsub|shardchannels"});
    return part;
}

std::string prefixed_pattern(std::string_view prefix, std::string_view rest) {
    return glob_escape(prefix).append(rest);
}

std::vector<std::string> acl_setuser_argv(std::string_view user, const acl_needs& needs) {
    if (user.empty()) throw invalid_argument("ACL user name must not be empty");
    if (std::any_of(user.begin(), user.end(),
                    [](char c) { return static_cast<unsigned char>(c) <= ' '; }))
        throw invalid_argument("ACL user name must not contain spaces or control characters");
    // `-@all` first, then the grants: the rules apply left to right. resetkeys/resetchannels
    // drop whatever patterns an earlier run or `acl-pubsub-default allchannels` left.
    // Redis keeps a user's rules as one space-separated line (ACL LIST, the ACL file), so it
    // refuses patterns holding a space: a prefix with one cannot be granted.
    auto check = [](const std::string& pattern, const char* what) {
        if (std::any_of(pattern.begin(), pattern.end(),
                        [](char c) { return static_cast<unsigned char>(c) <= ' '; }))
            throw invalid_argument(
                std::string("ACL ") + what + " pattern '" + pattern +
                "' holds a space or control character, which Redis ACL rules cannot hold "
                "(use a key prefix without one)");
    };
    for (const auto& k : needs.key_patterns) check(k, "key");
    for (const auto& ch : needs.channel_patterns) check(ch, "channel");
    std::vector<std::string> v{"ACL",           "SETUSER", std::string(user), "on", "resetkeys",
                               "resetchannels", "-@all"};
    for (const auto& c : needs.commands) v.push_back("+" + c);
    for (const auto& k : needs.key_patterns) v.push_back("~" + k);
    for (const auto& ch : needs.channel_patterns) v.push_back("&" + ch);
    return v;
}

std::string format_acl_setuser(std::string_view user, const acl_needs& needs) {
    std::string line;
    for (const auto& w : acl_setuser_argv(user, needs))
        line.append(line.empty() ? "" : " ").append(quoted(w));
    return line;
}

}  // namespace redcoord
