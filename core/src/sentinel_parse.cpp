#include "sentinel_parse.hpp"

#include <redcoord/core/errors.hpp>

#include <algorithm>
#include <sstream>

namespace redcoord::detail {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::vector<std::string_view> split_words(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
        const auto start = i;
        while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') ++i;
        if (i > start) out.push_back(s.substr(start, i - start));
    }
    return out;
}

// The value of `field` in a flat field/value array (HELLO's RESP2 map, a SENTINEL replicas entry).
std::optional<std::string> map_field(const reply& r, std::string_view field) {
    if (!r.is_array()) return std::nullopt;
    const auto& f = r.elements();
    for (std::size_t i = 0; i + 1 < f.size(); i += 2)
        if (f[i].is_string() && f[i].text() == field && f[i + 1].is_string())
            return f[i + 1].text();
    return std::nullopt;
}

}  // namespace

std::optional<std::uint16_t> parse_port(std::string_view s) noexcept {
    if (s.empty() || s.size() > 5) return std::nullopt;
    unsigned v = 0;
    for (char ch : s) {
        if (ch < '0' || ch > '9') return std::nullopt;
        v = v * 10 + static_cast<unsigned>(ch - '0');
    }
    if (v == 0 || v > 65535) return std::nullopt;
    return static_cast<std::uint16_t>(v);
}

std::string addr_text(const host_port& hp) { return hp.host + ":" + std::to_string(hp.port); }

bool is_auth_text(std::string_view s) noexcept {
    return starts_with(s, "NOAUTH") || starts_with(s, "WRONGPASS") ||
           s.find("authentication failed") != std::string_view::npos ||
           s.find("invalid password") != std::string_view::npos;
}

master_answer parse_master_answer(const reply& r) {
    master_answer a;
    if (r.is_error()) {
        a.what = master_answer::kind::refused;
        a.text = r.text();
        a.auth = is_auth_text(a.text);
    } else if (r.is_nil()) {
        a.what = master_answer::kind::unknown;
    } else if (r.is_array() && r.elements().size() == 2 && r.elements()[0].is_string() &&
               r.elements()[1].is_string()) {
        if (auto p = parse_port(r.elements()[1].text())) {
            a.what = master_answer::kind::master;
            a.addr = {r.elements()[0].text(), *p};
        } else {
            a.what = master_answer::kind::bad_reply;
            a.text = "bad port in reply";
        }
    } else {
        a.what = master_answer::kind::bad_reply;
        a.text = "unexpected reply to SENTINEL get-master-addr-by-name";
    }
    return a;
}

master_answer unreachable_answer(std::string error) {
    master_answer a;
    a.what = master_answer::kind::unreachable;
    a.auth = is_auth_text(error);
    // A pool in reconnect back-off fails at once with this text; the real cause is older.
    a.failed_recently = error.find("failed recently") != std::string::npos;
    a.text = std::move(error);
    return a;
}

std::vector<replica_entry> parse_replica_entries(const reply& r) {
    if (!r.is_array()) throw protocol_error("SENTINEL replicas: unexpected reply shape");
    std::vector<replica_entry> out;
    for (const auto& entry : r.elements()) {
        const auto ip = map_field(entry, "ip");
        const auto port = map_field(entry, "port");
        if (!ip || ip->empty() || !port) continue;
        const auto p = parse_port(*port);
        if (!p) continue;
        out.push_back({{*ip, *p}, map_field(entry, "flags").value_or("")});
    }
    return out;
}

std::vector<host_port> usable_replicas(const std::vector<replica_entry>& entries) {
    std::vector<host_port> out;
    for (const auto& e : entries) {
        const auto& f = e.flags;
        if (f.find("s_down") != std::string::npos || f.find("o_down") != std::string::npos ||
            f.find("disconnected") != std::string::npos)
            continue;
        out.push_back(e.addr);
    }
    return out;
}

std::vector<host_port> promoted_replicas(const std::vector<replica_entry>& entries) {
    std::vector<host_port> out;
    for (const auto& e : entries)
        if (e.flags.find("promoted") != std::string::npos &&
            std::find(out.begin(), out.end(), e.addr) == out.end())
            out.push_back(e.addr);
    return out;
}

std::optional<host_port> parse_notification(std::string_view channel, std::string_view payload,
                                            std::string_view service) {
    const auto w = split_words(payload);
    if (channel == "+switch-master" && w.size() >= 5 && w[0] == service) {
        if (auto p = parse_port(w[4])) return host_port{std::string(w[3]), *p};
    }
    // Published by the failover leader once the promoted replica reports role master, which is
    // also when that sentinel starts answering the new address.
    if (channel == "+promoted-slave" && w.size() >= 6 && w[4] == "@" && w[5] == service) {
        if (auto p = parse_port(w[3])) return host_port{std::string(w[2]), *p};
    }
    return std::nullopt;
}

std::optional<std::string> role_from_role_reply(const reply& r) {
    if (r.is_array() && !r.elements().empty() && r.elements()[0].is_string())
        return r.elements()[0].text();
    return std::nullopt;
}

std::optional<std::string> role_from_hello(const reply& r) { return map_field(r, "role"); }

std::optional<std::string> role_from_info(const reply& r) { return info_field(r, "role"); }

std::optional<std::string> info_field(const reply& r, std::string_view key) {
    if (!r.is_string()) return std::nullopt;
    std::istringstream in(r.text());
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
            line[key.size()] == ':')
            return line.substr(key.size() + 1);
    }
    return std::nullopt;
}

std::vector<host_port> replicas_from_role(const reply& r) {
    std::vector<host_port> out;
    if (!r.is_array() || r.elements().size() < 3 || !r.elements()[0].is_string() ||
        r.elements()[0].text() != "master" || !r.elements()[2].is_array())
        return out;
    for (const auto& e : r.elements()[2].elements()) {
        if (!e.is_array() || e.elements().size() < 2 || !e.elements()[0].is_string() ||
            !e.elements()[1].is_string())
            continue;
        if (auto p = parse_port(e.elements()[1].text()))
            out.push_back({e.elements()[0].text(), *p});
    }
    return out;
}

std::vector<host_port> replicas_from_info(const reply& r) {
    std::vector<host_port> out;
    if (info_field(r, "role") != "master") return out;
    std::istringstream in(r.text());
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        std::string_view l = line;
        if (l.substr(0, 5) != "slave") continue;
        const auto colon = l.find(':');
        const auto digits = l.substr(5, colon == std::string_view::npos ? 0 : colon - 5);
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
            continue;
        // ip=...,port=...,state=...: an IPv6 address holds ':' but never ',' or '='.
        std::string_view ip;
        std::optional<std::uint16_t> port;
        for (std::string_view rest = l.substr(colon + 1); !rest.empty();) {
            const auto comma = rest.find(',');
            const auto field = rest.substr(0, comma);
            rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
            if (field.substr(0, 3) == "ip=") ip = field.substr(3);
            if (field.substr(0, 5) == "port=") port = parse_port(field.substr(5));
        }
        if (!ip.empty() && port) out.push_back({std::string(ip), *port});
    }
    return out;
}

}  // namespace redcoord::detail
