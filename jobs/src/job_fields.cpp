#include "job_fields.hpp"

#include <redcoord/core/errors.hpp>

#include <charconv>
#include <cstdio>

namespace redcoord::detail {

std::string encode_job_options(const job_options& o) {
    const bool fixed = o.backoff.shape == backoff_policy::kind::fixed;
    const auto cap = fixed ? o.backoff.base : o.backoff.max;
    char buf[128];
    const int n =
        std::snprintf(buf, sizeof buf, "%d %u %c %lld %lld %.6f", o.priority, o.max_attempts,
                      fixed ? 'f' : 'e', static_cast<long long>(o.backoff.base.count()),
                      static_cast<long long>(cap.count()), o.backoff.jitter);
    return std::string(buf, static_cast<std::size_t>(n));
}

job_options_field decode_job_options(std::string_view field) {
    job_options_field f;
    const char* p = field.data();
    const char* end = p + field.size();
    auto r = std::from_chars(p, end, f.priority);
    if (r.ec == std::errc() && r.ptr < end && *r.ptr == ' ')
        r = std::from_chars(r.ptr + 1, end, f.max_attempts);
    else
        r.ec = std::errc::invalid_argument;
    if (r.ec != std::errc() || r.ptr == end || *r.ptr != ' ')
        throw protocol_error("job_queue: malformed job options on the server: '" +
                             std::string(field) + "'");
    return f;
}

std::string_view active_member_id(std::string_view member) noexcept {
    const auto colon = member.find(':');
    return colon == std::string_view::npos ? member : member.substr(colon + 1);
}

}  // namespace redcoord::detail
