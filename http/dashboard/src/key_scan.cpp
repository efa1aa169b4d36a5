#include "key_scan.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/reply.hpp>

#include <algorithm>
#include <charconv>

namespace redcoord::detail {

std::optional<primitive_ref> parse_primitive_key(std::string_view key, std::string_view prefix) {
    if (key.substr(0, prefix.size()) != prefix) return std::nullopt;
    key.remove_prefix(prefix.size());
    const auto open = key.find(":{");
    if (open == std::string_view::npos || open == 0) return std::nullopt;
    const auto kind = key.substr(0, open);
    if (kind.find_first_of(":{}") != std::string_view::npos) return std::nullopt;
    const auto rest = key.substr(open + 2);
    for (std::size_t close = rest.find('}'); close != std::string_view::npos;
         close = rest.find('}', close + 1)) {
        if (close == 0) return std::nullopt;
        if (close + 1 == rest.size() || rest[close + 1] == ':')
            return primitive_ref{std::string(kind), std::string(rest.substr(0, close))};
    }
    return std::nullopt;
}

std::optional<scan_position> parse_scan_position(std::string_view text) {
    if (text.empty()) return scan_position{};
    const auto dot = text.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == text.size()) return std::nullopt;
    scan_position p;
    const auto node = text.substr(0, dot);
    const auto [end, ec] = std::from_chars(node.data(), node.data() + node.size(), p.node);
    if (ec != std::errc{} || end != node.data() + node.size()) return std::nullopt;
    p.cursor = std::string(text.substr(dot + 1));
    if (!std::all_of(p.cursor.begin(), p.cursor.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    return p;
}

std::string format_scan_position(const scan_position& p) {
    return std::to_string(p.node) + "." + p.cursor;
}

std::string scan_pattern(std::string_view prefix, std::string_view kind) {
    return glob_escape(prefix) + (kind.empty() ? std::string("*") : glob_escape(kind) + ":{*");
}

discovery_page discover(std::span<connection_pool* const> nodes, std::string_view prefix,
                        std::string_view pattern, std::span<const std::string_view> kinds,
                        const scan_position& from, const scan_limits& limits) {
    discovery_page page;
    scan_position at = from;
    const std::string count = std::to_string(limits.count);
    auto seen = [&](const primitive_ref& r) {
        return std::any_of(page.found.begin(), page.found.end(), [&](const primitive_ref& f) {
            return f.kind == r.kind && f.name == r.name;
        });
    };
    for (std::size_t calls = 0; at.node < nodes.size(); ++calls) {
        if (calls == limits.max_calls || page.found.size() >= limits.want) {
            page.next = format_scan_position(at);
            return page;
        }
        const reply r =
            nodes[at.node]->command({"SCAN", at.cursor, "MATCH", pattern, "COUNT", count});
        if (!r.is_array() || r.elements().size() != 2)
            throw protocol_error("SCAN answered something other than [cursor, keys]");
        for (const auto& k : r.elements()[1].elements()) {
            auto ref = parse_primitive_key(k.text(), prefix);
            if (!ref || seen(*ref)) continue;
            if (std::find(kinds.begin(), kinds.end(), ref->kind) == kinds.end()) continue;
            page.found.push_back(std::move(*ref));
        }
        at.cursor = r.elements()[0].text();
        if (at.cursor == "0") ++at.node;
    }
    return page;
}

}  // namespace redcoord::detail
