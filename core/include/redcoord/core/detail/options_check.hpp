#pragma once
// The checks of the shared option groups (core/options.hpp), one place for every part that
// embeds them. Not part of the API.

#include <redcoord/core/export.hpp>
#include <redcoord/core/options.hpp>

#include <chrono>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord::detail {

// Throws invalid_argument naming `owner::field` (as "lock_options::timing.ttl") unless `t`
// obeys the rules documented on lock_timing.
void check_timing(const lock_timing& t, std::string_view owner);

// Throws invalid_argument naming `owner::replication.timeout` when replicas > 0 and the
// timeout is not in (0, ttl). Nothing is checked when replicas == 0 (the timeout is ignored).
void check_replication(const replication_options& r, std::chrono::milliseconds ttl,
                       std::string_view owner);

// Throws invalid_argument naming `owner::field` and `rule` unless `ok`.
void require_option(bool ok, std::string_view owner, std::string_view field, std::string_view rule);

}  // namespace redcoord::detail
REDCOORD_API_END
