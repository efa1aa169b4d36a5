#pragma once
/// @file
/// The `ADDR` of `--metrics-listen` and `dashboard --listen`: where an HTTP server binds.

#include <cstdint>
#include <string>
#include <string_view>

namespace redcoord::cli {

/// An address and port to listen on.
struct listen_address {
    std::string host;        ///< IP literal (IPv6 without brackets).
    std::uint16_t port = 0;  ///< TCP port; 0 lets the system pick one.
};

/// Parses `HOST:PORT`, `[IPV6]:PORT`, `:PORT` or `PORT` (the last two bind loopback,
/// 127.0.0.1: an operator page is never exposed by accident). HOST must be an IP literal.
/// @throws redcoord::invalid_argument naming `flag` for anything else (a missing or
///         out-of-range port, an empty host in brackets, a host name).
[[nodiscard]] listen_address parse_listen_address(std::string_view text, std::string_view flag);

}  // namespace redcoord::cli
