#pragma once
// Which `Host` headers the dashboard answers: a defence against DNS rebinding, where a page on
// another site reaches a loopback server through a name of its own.

#include <string>
#include <string_view>
#include <vector>

namespace redcoord::detail {

// True for an empty host (a client that sends none, never a browser), `localhost`, an IPv4
// literal or a bracketed IPv6 literal, or a name in `allowed` (case-insensitive); any port.
[[nodiscard]] bool host_allowed(std::string_view host, const std::vector<std::string>& allowed);

// `a == b` without regard to ASCII case (host names, header values such as `Bearer`).
[[nodiscard]] bool same_name(std::string_view a, std::string_view b);

}  // namespace redcoord::detail
