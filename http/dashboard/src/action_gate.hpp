#pragma once
// Whether a request may run one of the dashboard's actions: the decision alone (no I/O), so
// every refusal can be tested without a server. The order of the checks fixes which answer a
// request with several faults gets: method (405), actions off (403), body size (413), origin
// (403), bearer token (403), CSRF header (403).

#include <redcoord/http/route.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace redcoord::detail {

// The header the page sends the per-process CSRF token in. A custom header: a form or a
// `simple` cross-site request cannot carry it, and a script elsewhere cannot add it without a
// CORS preflight, which the dashboard never grants.
inline constexpr std::string_view csrf_header = "X-Redcoord-CSRF";

struct action_settings {
    bool enabled = false;         // actions allowed at all
    std::string_view token;       // the bearer token (non-empty when enabled)
    std::string_view csrf;        // the CSRF token embedded in the page
    std::size_t max_body = 4096;  // largest action body
};

struct refusal {
    int status;
    std::string message;
};

// Nothing when `req` may run an action; else the answer to give.
[[nodiscard]] std::optional<refusal> check_action(const http_request& req,
                                                  const action_settings& s);

// Whether an `Origin` value names the same host and port as `host` (the Host header):
// `http://` or `https://` then exactly the host, compared without regard to case.
[[nodiscard]] bool same_origin(std::string_view origin, std::string_view host);

// `a == b` in a time that depends on their lengths only (a token compared byte by byte would
// tell a remote guesser how many leading bytes are right).
[[nodiscard]] bool constant_time_equal(std::string_view a, std::string_view b) noexcept;

// The value of `name` in a form-encoded body (`a=1&b=2`, as a query string), or nothing.
[[nodiscard]] std::optional<std::string> form_param(const http_request& req,
                                                    const std::string& name);

}  // namespace redcoord::detail
