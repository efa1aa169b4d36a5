#pragma once
// A job's options as they rest on the server: one hash field `o` (job_scripts.cpp reads it),
// "priority max-attempts back-off-kind base-ms max-ms jitter", so that an add writes, and a
// claim reads, one field instead of six.

#include <redcoord/jobs/job_types.hpp>

#include <string>
#include <string_view>

namespace redcoord::detail {

/// The `o` field of a job with these options.
std::string encode_job_options(const job_options& o);

/// What a worker and get() read back from the `o` field.
struct job_options_field {
    int priority = 0;
    unsigned max_attempts = 1;
};

/// Parses an `o` field; throws redcoord::error when the server's value is malformed.
job_options_field decode_job_options(std::string_view field);

/// The id of an `:active` member, "<claim token>:<id>" (tokens have no ':').
std::string_view active_member_id(std::string_view member) noexcept;

}  // namespace redcoord::detail
