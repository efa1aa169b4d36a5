#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/errors.hpp>

#include <charconv>
#include <string>

namespace redcoord {
namespace {

// Messages name the faulty part but never quote the URI's text: a password pasted without
// percent-encoding can end up in any part (C1), so no fragment is safe to echo.
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

template <class Int>
Int parse_number(std::string_view s, Int lo, Int hi, std::string_view what) {
    long long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v < lo || v > hi)
        bad(std::string(what) + " is not a number in range " + std::to_string(lo) + ".." + std::to_string(hi));
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
        if (c == '/' || c == '@' || c == '?' || c == '#' || c == ' ' || static_cast<unsigned char>(c) < 0x20)
            bad("bad character in host");
    return hp;
}

// Splits "user:password@rest" at the LAST '@' of authority and path, as URL parsers do:
// passwords are often pasted without percent-encoding (base64 holds '/'), and an '@' or '/'
// inside one must not move the host boundary, or part of the password would be parsed
// (and reported) as host, port or database. Hosts, ports and database numbers never hold '@'.
std::string_view take_userinfo(std::string_view authority_and_path, endpoint& ep) {
    auto at = authority_and_path.rfind('@');
    if (at == std::string_view::npos) return authority_and_path;
    auto info = authority_and_path.substr(0, at);
    auto colon = info.find(':');
    if (colon == std::string_view::npos) {
        // "redis://secret@host" is the common password-only form.
        ep.password = percent_decode(info, "password");
    } else {
        ep.user = percent_decode(info.substr(0, colon), "user");
        ep.password = percent_decode(info.substr(colon + 1), "password");
    }
    return authority_and_path.substr(at + 1);
}

int parse_db(std::string_view s) { return parse_number<int>(s, 0, 1'000'000, "database"); }

}  // namespace

namespace {
// A host as a URI writes it: an IPv6 literal in brackets.
std::string uri_host(const std::string& h) { return h.find(':') != std::string::npos ? "[" + h + "]" : h; }
}  // namespace

std::string endpoint::to_string() const {
    std::string who;
    if (!user.empty()) who = user + (password.empty() ? "@" : ":***@");
    else if (!password.empty()) who = ":***@";
    if (is_sentinel()) {
        std::string s = "redis-sentinel://" + who;
        for (std::size_t i = 0; i < sentinels.size(); ++i) {
            if (i) s += ',';
            s += uri_host(sentinels[i].host) + ":" + std::to_string(sentinels[i].port);
        }
        return s + "/" + service + (db ? "/" + std::to_string(db) : "");
    }
    if (!unix_path.empty()) return "unix://" + unix_path + (db ? "?db=" + std::to_string(db) : "");
    return "redis://" + who + uri_host(host) + ":" + std::to_string(port) +
           (db ? "/" + std::to_string(db) : "");
}

endpoint endpoint::with_address(const host_port& hp) const {
    endpoint e = *this;
    e.sentinels.clear();
    e.service.clear();
    e.unix_path.clear();
    e.host = hp.host;
    e.port = hp.port;
    return e;
}

endpoint parse_endpoint(std::string_view uri) {
    endpoint ep;
    auto scheme_end = uri.find("://");
    if (scheme_end == std::string_view::npos) bad("missing scheme (expected redis://, unix:// or redis-sentinel://)");
    auto scheme = uri.substr(0, scheme_end);
    auto rest = uri.substr(scheme_end + 3);
    if (rest.find_first_of(" \r\n\t") != std::string_view::npos) bad("whitespace in URI");

    if (scheme == "unix") {
        auto q = rest.find('?');
        auto path = rest.substr(0, q);
        if (path.empty() || path.front() != '/') bad("unix socket path must be absolute");
        ep.unix_path = std::string(path);
        if (q != std::string_view::npos) {
            auto query = rest.substr(q + 1);
            if (query.substr(0, 3) != "db=") bad("unknown query parameter (only db=N)");
            ep.db = parse_db(query.substr(3));
        }
        return ep;
    }
    if (scheme != "redis" && scheme != "redis-sentinel")
        bad("unknown scheme (expected redis://, unix:// or redis-sentinel://)");

    rest = take_userinfo(rest, ep);
    auto slash = rest.find('/');
    auto authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);

    if (scheme == "redis") {
        auto hp = parse_host_port(authority, 6379);
        ep.host = hp.host;
        ep.port = hp.port;
        if (!path.empty()) ep.db = parse_db(path);
        return ep;
    }

    // redis-sentinel://h1:p1,h2:p2/service[/db]
    std::size_t start = 0;
    while (start <= authority.size()) {
        auto comma = authority.find(',', start);
        auto part = authority.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        ep.sentinels.push_back(parse_host_port(part, 26379));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    auto db_slash = path.find('/');
    ep.service = std::string(path.substr(0, db_slash));
    if (ep.service.empty()) bad("sentinel URI needs a service name after the sentinel list");
    if (db_slash != std::string_view::npos) ep.db = parse_db(path.substr(db_slash + 1));
    // Sentinels usually share the data nodes' password only when told; keep them apart.
    ep.host.clear();
    ep.port = 0;
    return ep;
}

}  // namespace redcoord
