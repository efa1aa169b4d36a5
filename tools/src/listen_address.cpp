#include "listen_address.hpp"

#include <redcoord/core/errors.hpp>

#include <arpa/inet.h>

#include <charconv>

namespace redcoord::cli {

listen_address parse_listen_address(std::string_view text, std::string_view flag) {
    auto bad = [&](const std::string& why) {
        return invalid_argument(std::string(flag) + ": '" + std::string(text) + "' " + why +
                                " (expected HOST:PORT, [IPV6]:PORT or PORT)");
    };
    listen_address out{"127.0.0.1", 0};
    std::string_view port = text;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
            throw bad("is not a bracketed address and port");
        out.host = std::string(text.substr(1, close - 1));
        port = text.substr(close + 2);
        in6_addr a6{};
        if (inet_pton(AF_INET6, out.host.c_str(), &a6) != 1) throw bad("has no IPv6 address");
    } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
        if (colon > 0) out.host = std::string(text.substr(0, colon));
        port = text.substr(colon + 1);
        in_addr a4{};
        if (out.host.find(':') != std::string::npos)
            throw bad("puts an IPv6 address without brackets");
        if (inet_pton(AF_INET, out.host.c_str(), &a4) != 1)
            throw bad("has a host that is not an IPv4 address");
    }
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value > 65535)
        throw bad("has no valid port");
    out.port = static_cast<std::uint16_t>(value);
    return out;
}

}  // namespace redcoord::cli
