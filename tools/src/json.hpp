#pragma once
/// @file
/// Just enough JSON writing for `--json` output: one object per line, keys in insertion order.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord::cli {

/// `s` as a JSON string literal with quotes. Valid UTF-8 passes through; control characters
/// are escaped; each byte that is not part of valid UTF-8 becomes `\u00XX` (so binary
/// payloads still give valid JSON, read as Latin-1 for those bytes).
[[nodiscard]] std::string json_quote(std::string_view s);

/// Builds one JSON object. Not thread-safe (a plain value).
class json_object {
public:
    json_object& add(std::string_view key, std::string_view value);
    json_object& add(std::string_view key, const char* value) {
        return add(key, std::string_view(value));
    }
    json_object& add(std::string_view key, const std::string& value) {
        return add(key, std::string_view(value));
    }
    json_object& add(std::string_view key, std::int64_t value);
    json_object& add(std::string_view key, std::uint64_t value);
    json_object& add(std::string_view key, int value) {
        return add(key, static_cast<std::int64_t>(value));
    }
    json_object& add(std::string_view key, bool value);
    /// A string, or null for nullopt.
    json_object& add(std::string_view key, const std::optional<std::string>& value);
    /// `raw_json` inserted verbatim (an array or object built elsewhere).
    json_object& add_raw(std::string_view key, std::string_view raw_json);
    /// The object's text, e.g. `{"a":1}`.
    [[nodiscard]] std::string str() const;

private:
    void key(std::string_view k);
    std::string body_;
};

/// `[e1,e2,...]` from already-encoded JSON values.
[[nodiscard]] std::string json_array(const std::vector<std::string>& encoded);

}  // namespace redcoord::cli
