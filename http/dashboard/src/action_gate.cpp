#include "action_gate.hpp"

#include "host_check.hpp"

namespace redcoord::detail {

bool same_origin(std::string_view origin, std::string_view host) {
    for (std::string_view scheme : {"http://", "https://"})
        if (origin.substr(0, scheme.size()) == scheme)
            return !host.empty() && same_name(origin.substr(scheme.size()), host);
    return false;
}

bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

std::optional<std::string> form_param(const http_request& req, const std::string& name) {
    http_request form;
    form.query = req.body;
    return form.param(name);
}

std::optional<refusal> check_action(const http_request& req, const action_settings& s) {
    if (req.method != "POST") return refusal{405, "actions are POST only\n"};
    if (!s.enabled)
        return refusal{403,
                       "actions are disabled (start the dashboard with --allow-actions and "
                       "--token-file)\n"};
    if (req.body.size() > s.max_body) return refusal{413, "action request too large\n"};
    // A browser names the page a request comes from; one from another site is refused even
    // with the right headers. Clients that send no Origin (curl) are judged by the token.
    if (const auto origin = req.header("origin"); origin && !same_origin(*origin, req.host))
        return refusal{403, "cross-origin action refused\n"};
    const auto auth = req.header("authorization");
    constexpr std::string_view bearer = "Bearer ";
    if (!auth || auth->size() <= bearer.size() ||
        !same_name(auth->substr(0, bearer.size()), bearer) ||
        !constant_time_equal(auth->substr(bearer.size()), s.token))
        return refusal{403, "missing or bad token (Authorization: Bearer TOKEN)\n"};
    const auto csrf = req.header(csrf_header);
    if (!csrf || !constant_time_equal(*csrf, s.csrf))
        return refusal{403,
                       "missing or bad CSRF token (header X-Redcoord-CSRF, from the page or "
                       "GET api/actions)\n"};
    return std::nullopt;
}

}  // namespace redcoord::detail
