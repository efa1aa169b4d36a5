#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/token.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>

namespace redcoord {

namespace {
// random_token()'s length: 20 bytes as hex.
constexpr std::size_t random_part = 40;

bool is_hex(std::string_view s) {
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}
}  // namespace

std::string default_holder_label() {
    std::array<char, 256> host{};
    if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
    std::string h(host.data());
    if (h.empty()) h = "host";
    return h + ":" + std::to_string(::getpid());
}

std::string resolve_holder_label(const std::optional<std::string>& label) {
    if (!label) return default_holder_label();
    if (label->size() > max_holder_label)
        throw invalid_argument("holder label is " + std::to_string(label->size()) +
                               " bytes; at most " + std::to_string(max_holder_label));
    if (label->find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
        throw invalid_argument("holder label holds a CR, LF or NUL byte");
    return *label;
}

std::string labelled_token(std::string_view label) {
    std::string t = random_token();
    if (!label.empty()) {
        t += '/';
        t += label;
    }
    return t;
}

std::string_view holder_label_of(std::string_view token) noexcept {
    if (token.size() <= random_part + 1 || token[random_part] != '/' ||
        !is_hex(token.substr(0, random_part)))
        return {};
    return token.substr(random_part + 1);
}

}  // namespace redcoord
