#pragma once
// Discovery of primitives by SCAN: which primitive a key belongs to, the page cursor that
// walks every master in turn, and the bounded scan itself.

#include <redcoord/core/pool.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord::detail {

// A primitive named by a key `<prefix><kind>:{<name>}[:<suffix>]`.
struct primitive_ref {
    std::string kind;
    std::string name;
};

// The primitive `key` belongs to, or nothing when the key is not laid out that way. The name
// ends at the first `}` that ends the key or is followed by `:` (a name holding `}:` is read
// short; redcoord's own names rarely do).
[[nodiscard]] std::optional<primitive_ref> parse_primitive_key(std::string_view key,
                                                               std::string_view prefix);

// Where a paged scan stands: which master (index into the scanned nodes) and its SCAN cursor.
// Written `<node>.<cursor>`; the empty text is the start.
struct scan_position {
    std::size_t node = 0;
    std::string cursor = "0";
};
[[nodiscard]] std::optional<scan_position> parse_scan_position(std::string_view text);
[[nodiscard]] std::string format_scan_position(const scan_position& p);

// One page of a discovery: the primitives found (each once, in scan order) and where the
// next page starts (nothing: the scan is complete).
struct discovery_page {
    std::vector<primitive_ref> found;
    std::optional<std::string> next;
};

// The SCAN MATCH pattern of the keys of `kind` (empty: every key) under `prefix`.
[[nodiscard]] std::string scan_pattern(std::string_view prefix, std::string_view kind);

struct scan_limits {
    std::size_t want = 50;       // stop once this many primitives were found
    std::size_t count = 100;     // COUNT hint per call
    std::size_t max_calls = 20;  // SCAN calls per page at most
};

// Scans `nodes` (every master, in order) from `from` for keys of `kinds` under `prefix`.
// `pattern` narrows the SCAN (scan_pattern()). Throws as the pools' commands.
[[nodiscard]] discovery_page discover(std::span<connection_pool* const> nodes,
                                      std::string_view prefix, std::string_view pattern,
                                      std::span<const std::string_view> kinds,
                                      const scan_position& from, const scan_limits& limits);

}  // namespace redcoord::detail
