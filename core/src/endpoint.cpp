#include <redcoord/core/duration.hpp>
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/errors.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <string>

namespace redcoord {
namespace {

// Messages name the faulty part but never quote the URI's text: a password pasted without
// percent-encoding can end up in any part, so no fragment is safe to echo.
[[noreturn]] void bad(std::string_view why) {
    throw invalid_argument("invalid redis URI: " + std::string(why));
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The credentials are decoded but never quoted back in a message.
std::string percent_decode(std::string_view s, std::string_view what) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) bad(std::string("bad percent-escape in ") + std::string(what));
        int hi = hex_value(s[i + 1]);
        int lo = hex_value(s[i + 2]);
        if (hi < 0 || lo < 0) bad(std::string("bad percent-escape in ") + std::string(what));
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

// What a query value may not hold raw: the query's own separators, '@' (see userinfo_end),
// '%' itself, and anything that is not printable ASCII.
std::string percent_encode(std::string_view s) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || c == '%' || c == '&' || c == '=' || c == '#' || c == '@' ||
            c == '?' || c == '+') {
            out += '%';
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += c;
        }
    }
    return out;
}

template <class Int>
Int parse_number(std::string_view s, Int lo, Int hi, std::string_view what) {
    long long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v < lo || v > hi)
        bad(std::string(what) + " is not a number in range " + std::to_string(lo) + ".." +
            std::to_string(hi));
    return static_cast<Int>(v);
}

host_port parse_host_port(std::string_view s, std::uint16_t default_port) {
    host_port hp;
    hp.port = default_port;
    if (s.empty()) bad("empty host");
    if (s.front() == '[') {
        auto close = s.find(']');
        if (close == std::string_view::npos) bad("unterminated IPv6 address");
        hp.host = std::string(s.substr(1, close - 1));
        auto rest = s.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') bad("junk after IPv6 address");
            hp.port = parse_number<std::uint16_t>(rest.substr(1), 1, 65535, "port");
        }
    } else {
        auto colon = s.rfind(':');
        if (colon != std::string_view::npos) {
            // "::1" split at its last colon would be host ":" and port 1: an IPv6 literal
            // needs brackets (RFC 3986), and a host name never holds a colon.
            if (s.substr(0, colon).find(':') != std::string_view::npos)
                bad("an IPv6 address must be in brackets, e.g. [::1]:6379");
            hp.host = std::string(s.substr(0, colon));
            hp.port = parse_number<std::uint16_t>(s.substr(colon + 1), 1, 65535, "port");
        } else {
            hp.host = std::string(s);
        }
    }
    if (hp.host.empty()) bad("empty host");
    for (char c : hp.host)
        if (c == '/' || c == '@' || c == '?' || c == '#' || c == ' ' ||
            static_cast<unsigned char>(c) < 0x20)
            bad("bad character in host");
    return hp;
}

// "h1:p1,h2:p2": the seed list of a Sentinel or Cluster URI.
std::vector<host_port> parse_host_list(std::string_view authority, std::uint16_t default_port) {
    std::vector<host_port> out;
    std::size_t start = 0;
    while (start <= authority.size()) {
        auto comma = authority.find(',', start);
        auto part = authority.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        out.push_back(parse_host_port(part, default_port));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

int parse_db(std::string_view s) { return parse_number<int>(s, 0, 1'000'000, "database"); }

bool parse_bool(std::string_view s, std::string_view what) {
    if (s == "true" || s == "1" || s == "yes") return true;
    if (s == "false" || s == "0" || s == "no") return false;
    bad(std::string(what) + " must be true or false");
}

std::chrono::milliseconds parse_timeout(std::string_view s, std::string_view what) {
    try {
        return parse_duration(s);
    } catch (const invalid_argument&) {
        // parse_duration quotes its input; a URI's text is never quoted (see bad()).
        bad(std::string(what) + " is not a duration (e.g. 500ms, 2s)");
    }
}

constexpr std::array<std::string_view, 14> option_names = {
    "db",       "connect_timeout", "command_timeout", "keepalive",        "tls",
    "ca_file",  "ca_dir",          "verify_peer",     "server_name",      "cert_file",
    "key_file", "min_tls_version", "sentinel_user",   "sentinel_password"};

bool is_tls_option(std::string_view name) {
    return name == "ca_file" || name == "ca_dir" || name == "verify_peer" ||
           name == "server_name" || name == "cert_file" || name == "key_file" ||
           name == "min_tls_version";
}

// Option names are not secret, so a mistyped one is quoted, but only a key made of lowercase
// letters and '_' as every option is: a token with digits, capitals or punctuation may be a
// password pasted in the wrong place. Otherwise its position says which one it is.
std::string unknown_option(std::string_view name, std::size_t position) {
    const bool name_like = !name.empty() && name.size() <= 32 &&
                           std::all_of(name.begin(), name.end(),
                                       [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
    if (name_like) return "unknown option '" + std::string(name) + "'";
    return "unknown option (option " + std::to_string(position) + " of the query)";
}

// One `name=value` of the query applied to `ep`; `tls_asked` records a TLS option seen.
void apply_option(endpoint& ep, std::string_view name, const std::string& value, bool& tls_asked,
                  std::size_t position) {
    if (name == "db")
        ep.db = parse_db(value);
    else if (name == "connect_timeout") {
        ep.connect_timeout = parse_timeout(value, name);
        if (ep.connect_timeout.count() <= 0) bad("connect_timeout must be > 0");
    } else if (name == "command_timeout")
        ep.command_timeout = parse_timeout(value, name);
    else if (name == "keepalive")
        ep.keepalive = parse_bool(value, name);
    else if (name == "tls")
        ep.tls.enabled = parse_bool(value, name);
    else if (name == "ca_file")
        ep.tls.ca_file = value;
    else if (name == "ca_dir")
        ep.tls.ca_dir = value;
    else if (name == "verify_peer")
        ep.tls.verify_peer = parse_bool(value, name);
    else if (name == "server_name")
        ep.tls.server_name = value;
    else if (name == "cert_file")
        ep.tls.cert_file = value;
    else if (name == "key_file")
        ep.tls.key_file = value;
    else if (name == "min_tls_version") {
        if (value == "1.2")
            ep.tls.min_version = tls_version::v1_2;
        else if (value == "1.3")
            ep.tls.min_version = tls_version::v1_3;
        else
            bad("min_tls_version must be 1.2 or 1.3");
    } else if (name == "sentinel_user")
        ep.sentinel_user = value;
    else if (name == "sentinel_password")
        ep.sentinel_password = value;
    else
        bad(unknown_option(name, position) +
            " (known: db, connect_timeout, command_timeout, keepalive, tls, ca_file, "
            "ca_dir, "
            "verify_peer, server_name, cert_file, key_file, min_tls_version, sentinel_user, "
            "sentinel_password)");
    if (is_tls_option(name)) tls_asked = true;
}

void parse_query(std::string_view query, endpoint& ep) {
    bool tls_asked = false;
    std::size_t start = 0, position = 0;
    while (start <= query.size()) {
        auto amp = query.find('&', start);
        auto item = query.substr(
            start, amp == std::string_view::npos ? std::string_view::npos : amp - start);
        auto eq = item.find('=');
        if (item.empty() || eq == std::string_view::npos || eq == 0)
            bad("option without a name=value form");
        const std::string name = percent_decode(item.substr(0, eq), "option name");
        apply_option(ep, name, percent_decode(item.substr(eq + 1), "option value"), tls_asked,
                     ++position);
        if (amp == std::string_view::npos) break;
        start = amp + 1;
    }
    if (tls_asked && !ep.tls.enabled) bad("TLS options need rediss:// or tls=true");
    if (!ep.is_sentinel() && (!ep.sentinel_user.empty() || !ep.sentinel_password.empty()))
        bad("sentinel_user and sentinel_password are for redis-sentinel:// only");
    if (!ep.unix_path.empty() && ep.tls.enabled) bad("TLS is not available on a unix socket");
}

// True when `text` holds "?<option>=" or "&<option>=": the start of a query, which would mean
// an '@' after it belonged to an option value that should have been written %40.
bool holds_query(std::string_view text) {
    for (auto name : option_names)
        for (char sep : {'?', '&'}) {
            const std::string needle = sep + std::string(name) + '=';
            if (text.find(needle) != std::string_view::npos) return true;
        }
    return false;
}

// Where the user information ends: the LAST '@' of the URI, as URL parsers do. Passwords are
// often pasted without percent-encoding (base64 holds '/'), and an '@', '/' or '?' inside one
// must not move the host boundary, or part of the password would be parsed (and reported) as
// host, port, database or option. Hosts, ports and databases never hold '@', and option
// values must write it %40.
void take_userinfo(std::string_view& rest, endpoint& ep) {
    auto at = rest.rfind('@');
    if (at == std::string_view::npos) return;
    auto info = rest.substr(0, at);
    if (holds_query(info)) bad("an '@' in an option value must be written %40");
    auto colon = info.find(':');
    if (colon == std::string_view::npos) {
        // "redis://secret@host" is the common password-only form.
        ep.password = percent_decode(info, "password");
    } else {
        ep.user = percent_decode(info.substr(0, colon), "user");
        ep.password = percent_decode(info.substr(colon + 1), "password");
    }
    rest = rest.substr(at + 1);
}

// A host as a URI writes it: an IPv6 literal in brackets.
std::string uri_host(const std::string& h) {
    return h.find(':') != std::string::npos ? "[" + h + "]" : h;
}

// The options that differ from a default endpoint's, as a query ("" when none). `db` is in the
// path except on unix sockets, and TLS itself in the scheme except for Sentinel.
std::string query_of(const endpoint& ep) {
    const endpoint d;
    std::string q;
    auto add = [&](std::string_view name, const std::string& value) {
        q += (q.empty() ? "?" : "&") + std::string(name) + "=" + percent_encode(value);
    };
    if (!ep.unix_path.empty() && ep.db) add("db", std::to_string(ep.db));
    if (ep.connect_timeout != d.connect_timeout)
        add("connect_timeout", format_duration(ep.connect_timeout));
    if (ep.command_timeout != d.command_timeout)
        add("command_timeout", format_duration(ep.command_timeout));
    if (ep.keepalive != d.keepalive) add("keepalive", ep.keepalive ? "true" : "false");
    if ((ep.is_sentinel() || ep.is_cluster()) && ep.tls.enabled) add("tls", "true");
    const tls_options& t = ep.tls;
    if (!t.ca_file.empty()) add("ca_file", t.ca_file);
    if (!t.ca_dir.empty()) add("ca_dir", t.ca_dir);
    if (!t.verify_peer) add("verify_peer", "false");
    if (!t.server_name.empty()) add("server_name", t.server_name);
    if (!t.cert_file.empty()) add("cert_file", t.cert_file);
    if (!t.key_file.empty()) add("key_file", t.key_file);
    if (t.min_version == tls_version::v1_3) add("min_tls_version", "1.3");
    if (!ep.sentinel_user.empty()) add("sentinel_user", ep.sentinel_user);
    if (!ep.sentinel_password.empty()) add("sentinel_password", "***");
    return q;
}

}  // namespace

std::string endpoint::to_string() const {
    std::string who;
    if (!user.empty())
        who = user + (password.empty() ? "@" : ":***@");
    else if (!password.empty())
        who = ":***@";
    const std::string query = query_of(*this);
    if (is_sentinel()) {
        std::string s = "redis-sentinel://" + who;
        for (std::size_t i = 0; i < sentinels.size(); ++i) {
            if (i) s += ',';
            s += uri_host(sentinels[i].host) + ":" + std::to_string(sentinels[i].port);
        }
        return s + "/" + service + (db ? "/" + std::to_string(db) : "") + query;
    }
    if (is_cluster()) {
        std::string s = "redis-cluster://" + who;
        for (std::size_t i = 0; i < cluster_nodes.size(); ++i) {
            if (i) s += ',';
            s += uri_host(cluster_nodes[i].host) + ":" + std::to_string(cluster_nodes[i].port);
        }
        return s + query;
    }
    if (!unix_path.empty()) return "unix://" + unix_path + query;
    return (tls.enabled ? "rediss://" : "redis://") + who + uri_host(host) + ":" +
           std::to_string(port) + (db ? "/" + std::to_string(db) : "") + query;
}

endpoint endpoint::with_address(const host_port& hp) const {
    endpoint e = *this;
    e.sentinels.clear();
    e.cluster_nodes.clear();
    e.service.clear();
    e.unix_path.clear();
    e.sentinel_user.clear();
    e.sentinel_password.clear();
    e.host = hp.host;
    e.port = hp.port;
    return e;
}

endpoint parse_endpoint(std::string_view uri) {
    endpoint ep;
    auto scheme_end = uri.find("://");
    if (scheme_end == std::string_view::npos)
        bad("missing scheme (expected redis://, rediss://, unix://, redis-sentinel:// or "
            "redis-cluster://)");
    auto scheme = uri.substr(0, scheme_end);
    auto rest = uri.substr(scheme_end + 3);
    if (rest.find_first_of(" \r\n\t") != std::string_view::npos) bad("whitespace in URI");

    if (scheme == "unix") {
        auto q = rest.find('?');
        auto path = rest.substr(0, q);
        if (path.empty() || path.front() != '/') bad("unix socket path must be absolute");
        ep.unix_path = std::string(path);
        if (q != std::string_view::npos) parse_query(rest.substr(q + 1), ep);
        return ep;
    }
    const bool cluster = scheme == "redis-cluster" || scheme == "rediss-cluster";
    if (scheme != "redis" && scheme != "rediss" && scheme != "redis-sentinel" && !cluster)
        bad("unknown scheme (expected redis://, rediss://, unix://, redis-sentinel:// or "
            "redis-cluster://)");
    ep.tls.enabled = scheme == "rediss" || scheme == "rediss-cluster";

    take_userinfo(rest, ep);
    std::string_view query;
    bool has_query = false;
    if (auto q = rest.find('?'); q != std::string_view::npos) {
        query = rest.substr(q + 1);
        rest = rest.substr(0, q);
        has_query = true;
    }
    auto slash = rest.find('/');
    auto authority = rest.substr(0, slash);
    std::string_view path =
        slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);

    if (cluster) {
        // redis-cluster://h1:p1,h2:p2[/0]
        ep.cluster_nodes = parse_host_list(authority, 6379);
        if (!path.empty() && parse_db(path) != 0) bad("a cluster has only database 0");
        ep.host.clear();
        ep.port = 0;
    } else if (scheme != "redis-sentinel") {
        auto hp = parse_host_port(authority, 6379);
        ep.host = hp.host;
        ep.port = hp.port;
        if (!path.empty()) ep.db = parse_db(path);
    } else {
        // redis-sentinel://h1:p1,h2:p2/service[/db]
        ep.sentinels = parse_host_list(authority, 26379);
        auto db_slash = path.find('/');
        ep.service = std::string(path.substr(0, db_slash));
        if (ep.service.empty()) bad("sentinel URI needs a service name after the sentinel list");
        if (db_slash != std::string_view::npos) ep.db = parse_db(path.substr(db_slash + 1));
        // Sentinels usually share the data nodes' password only when told; keep them apart.
        ep.host.clear();
        ep.port = 0;
    }
    if (has_query) parse_query(query, ep);
    if (ep.is_cluster() && ep.db != 0) bad("a cluster has only database 0");
    return ep;
}

}  // namespace redcoord
