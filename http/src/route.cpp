#include <redcoord/http/route.hpp>

#include <algorithm>
#include <cctype>

namespace redcoord {

namespace {
int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
}  // namespace

std::string percent_decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '+') {
            out += ' ';
        } else if (c == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
                   hex_value(text[i + 2]) >= 0) {
            out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
            i += 2;
        } else {
            out += c;
        }
    }
    return out;
}

std::optional<std::string> http_request::param(const std::string& name) const {
    std::string_view q = query;
    while (!q.empty()) {
        const auto amp = q.find('&');
        const std::string_view pair = q.substr(0, amp);
        q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
        const auto eq = pair.find('=');
        if (percent_decode(pair.substr(0, eq)) != name) continue;
        return eq == std::string_view::npos ? std::string{} : percent_decode(pair.substr(eq + 1));
    }
    return std::nullopt;
}

std::optional<std::string_view> http_request::header(std::string_view name) const {
    for (const auto& [k, v] : headers)
        if (k.size() == name.size() &&
            std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
                return std::tolower(static_cast<unsigned char>(a)) ==
                       std::tolower(static_cast<unsigned char>(b));
            }))
            return std::string_view(v);
    return std::nullopt;
}

}  // namespace redcoord
