#include "json_out.hpp"

namespace redcoord::detail {

namespace {

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 when the bytes there are
// not one (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
std::size_t utf8_length(std::string_view s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
    const unsigned char c = b(0);
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (!cont(1) || !cont(2)) return 0;
        if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
        if (c == 0xED && b(1) > 0x9F) return 0;  // surrogate
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (!cont(1) || !cont(2) || !cont(3)) return 0;
        if (c == 0xF0 && b(1) < 0x90) return 0;
        if (c == 0xF4 && b(1) > 0x8F) return 0;
        return 4;
    }
    return 0;
}

void escape_unit(std::string& out, unsigned v) {
    static const char* hex = "0123456789abcdef";
    out += "\\u00";
    out += hex[(v >> 4) & 0xF];
    out += hex[v & 0xF];
}

}  // namespace

void json_out::separate() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!first_) out_ += ',';
    first_ = false;
}

json_out& json_out::begin_object() {
    separate();
    out_ += '{';
    first_ = true;
    return *this;
}

json_out& json_out::end_object() {
    out_ += '}';
    first_ = false;
    return *this;
}

json_out& json_out::begin_array() {
    separate();
    out_ += '[';
    first_ = true;
    return *this;
}

json_out& json_out::end_array() {
    out_ += ']';
    first_ = false;
    return *this;
}

json_out& json_out::key(std::string_view k) {
    separate();
    quoted(k);
    out_ += ':';
    after_key_ = true;
    return *this;
}

json_out& json_out::value(std::string_view s) {
    separate();
    quoted(s);
    return *this;
}

json_out& json_out::value(std::uint64_t n) {
    separate();
    out_ += std::to_string(n);
    return *this;
}

json_out& json_out::value(std::int64_t n) {
    separate();
    out_ += std::to_string(n);
    return *this;
}

json_out& json_out::value(bool b) {
    separate();
    out_ += b ? "true" : "false";
    return *this;
}

json_out& json_out::null() {
    separate();
    out_ += "null";
    return *this;
}

json_out& json_out::raw(std::string_view json) {
    separate();
    out_.append(json);
    return *this;
}

void json_out::quoted(std::string_view s) {
    out_ += '"';
    std::size_t i = 0;
    while (i < s.size() && i < cap_) {
        const auto n = utf8_length(s, i);
        if (n == 0 || i + n > cap_) {
            if (n != 0) break;  // a character cut by the cap: stop before it
            escape_unit(out_, static_cast<unsigned char>(s[i]));
            ++i;
            continue;
        }
        const char c = s[i];
        if (n > 1) {
            out_.append(s.substr(i, n));
        } else if (c == '"' || c == '\\') {
            out_ += '\\';
            out_ += c;
        } else if (c == '\n') {
            out_ += "\\n";
        } else if (c == '\t') {
            out_ += "\\t";
        } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F || c == '<' || c == '>' ||
                   c == '&') {
            escape_unit(out_, static_cast<unsigned char>(c));
        } else {
            out_ += c;
        }
        i += n;
    }
    if (i < s.size()) out_ += " \xE2\x80\xA6 [" + std::to_string(s.size()) + " bytes]";
    out_ += '"';
}

}  // namespace redcoord::detail
