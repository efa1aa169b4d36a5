#pragma once
// Groups, dedupe windows and debounce on the client side (docs/jobs.md#groups): the checks of
// one job's options before anything is sent, and the server's refusal as a typed error. No I/O.

#include <redcoord/jobs/job_queue.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redcoord::detail {

/// Checks a group name: 1 to max_group_length bytes, no `{`, `}` or control characters (a
/// group is part of the key `<base>:gw:<group>`, and braces would change what a reader takes
/// for the hash tag). @throws invalid_group.
void validate_group(std::string_view group);

/// Checks job_options::group, dedupe_for and debounce of one job.
/// @throws invalid_group; invalid_argument for a negative window, a window without an id, or
///         debounce with dependencies.
void check_group_options(const job_options& o);

/// Whether a job needs the format 2 add script (a group, a dedupe window or debounce).
[[nodiscard]] bool needs_format2(const job_options& o) noexcept;

/// Throws debounce_refused for an add script's `JOBSTARTED <job place> <state>` (the place of
/// the job in `sent`, from 1); returns for any other text.
void throw_if_debounce_refusal(const std::string& text,
                               const std::vector<std::pair<std::string, job_options>>& sent);

}  // namespace redcoord::detail
