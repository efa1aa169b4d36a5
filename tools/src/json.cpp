#include "json.hpp"

#include <cstdio>

namespace redcoord::cli {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when invalid.
std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (b < 0x80) return 1;
    if ((b & 0xE0) == 0xC0)
        n = 2, cp = b & 0x1F;
    else if ((b & 0xF0) == 0xE0)
        n = 3, cp = b & 0x0F;
    else if ((b & 0xF8) == 0xF0)
        n = 4, cp = b & 0x07;
    else
        return 0;
    if (i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        const auto c = static_cast<unsigned char>(s[i + k]);
        if ((c & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (c & 0x3F);
    }
    // Reject overlong forms, surrogates and values past U+10FFFF.
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
    return n;
}

void append_escaped_byte(std::string& out, unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", c);
    out += buf;
}

}  // namespace

std::string json_quote(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                default:
                    if (c < 0x20 || c == 0x7F)
                        append_escaped_byte(out, c);
                    else
                        out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        const std::size_t n = utf8_length(s, i);
        if (n == 0) {
            append_escaped_byte(out, c);
            ++i;
        } else {
            out.append(s.substr(i, n));
            i += n;
        }
    }
    out += '"';
    return out;
}

void json_object::key(std::string_view k) {
    if (!body_.empty()) body_ += ',';
    body_ += json_quote(k);
    body_ += ':';
}

json_object& json_object::add(std::string_view k, std::string_view value) {
    key(k);
    body_ += json_quote(value);
    return *this;
}

json_object& json_object::add(std::string_view k, std::int64_t value) {
    key(k);
    body_ += std::to_string(value);
    return *this;
}

json_object& json_object::add(std::string_view k, std::uint64_t value) {
    key(k);
    body_ += std::to_string(value);
    return *this;
}

json_object& json_object::add(std::string_view k, bool value) {
    key(k);
    body_ += value ? "true" : "false";
    return *this;
}

json_object& json_object::add(std::string_view k, const std::optional<std::string>& value) {
    key(k);
    body_ += value ? json_quote(*value) : std::string("null");
    return *this;
}

json_object& json_object::add_raw(std::string_view k, std::string_view raw_json) {
    key(k);
    body_ += raw_json;
    return *this;
}

std::string json_object::str() const { return "{" + body_ + "}"; }

std::string json_array(const std::vector<std::string>& encoded) {
    std::string out = "[";
    for (std::size_t i = 0; i < encoded.size(); ++i) {
        if (i) out += ',';
        out += encoded[i];
    }
    return out + "]";
}

}  // namespace redcoord::cli
