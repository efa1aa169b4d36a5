#include <redcoord/core/duration.hpp>

#include <redcoord/core/errors.hpp>

#include <cctype>
#include <cmath>

namespace redcoord {
namespace {

[[noreturn]] void bad(std::string_view text, std::string_view why) {
    throw invalid_argument("bad duration '" + std::string(text) + "' (" + std::string(why) +
                           "): use e.g. 500ms, 20s, 2m, 1h, 1m30s");
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text) {
    if (text.empty()) bad(text, "empty");
    if (text == "0") return std::chrono::milliseconds(0);
    long double total_ms = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t start = i;
        bool dot = false;
        while (i < text.size() &&
               (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !dot))) {
            if (text[i] == '.') dot = true;
            ++i;
        }
        const std::string_view number = text.substr(start, i - start);
        if (number.empty() || number == ".") bad(text, "expected a number");
        const std::size_t ustart = i;
        while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
        const std::string_view unit = text.substr(ustart, i - ustart);
        long double scale = 0;
        if (unit == "ms")
            scale = 1;
        else if (unit == "s")
            scale = 1000;
        else if (unit == "m")
            scale = 60'000;
        else if (unit == "h")
            scale = 3'600'000;
        else if (unit.empty())
            bad(text, "missing unit");
        else
            bad(text, "unknown unit '" + std::string(unit) + "'");
        total_ms += std::stold(std::string(number)) * scale;
    }
    // 2^63 ns is about 292 years: keep clear of steady_clock overflow.
    if (!(total_ms < 9.0e12L)) bad(text, "too large");
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::floor(total_ms)));
}

std::string format_duration(std::chrono::milliseconds d) {
    std::int64_t ms = d.count();
    if (ms == 0) return "0s";
    std::string out;
    if (ms < 0) {
        out = "-";
        ms = -ms;
    }
    const std::int64_t h = ms / 3'600'000, m = ms / 60'000 % 60, s = ms / 1000 % 60, r = ms % 1000;
    if (h) out += std::to_string(h) + "h";
    if (m) out += std::to_string(m) + "m";
    if (s) out += std::to_string(s) + "s";
    if (r) out += std::to_string(r) + "ms";
    return out;
}

}  // namespace redcoord
