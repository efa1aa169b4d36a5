#pragma once
// The dashboard's actions (retry, cancel or remove a job; clean a job state; pause or resume a
// job queue; requeue a reliable queue's dead letters), each one call of the parts' public API.
// The caller has already judged the request (action_gate.hpp).

#include <redcoord/core/pool.hpp>
#include <redcoord/http/route.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord::detail {

// The action routes under `api/actions/`, in the order the docs list them.
[[nodiscard]] const std::vector<std::string_view>& action_names();

// What an action did: its JSON answer and a short outcome for the log (`done`, `nothing`).
struct action_result {
    std::string json;
    std::string outcome;
};

// Runs `action` (one of action_names()) with the parameters of `req`'s form body (`name`,
// `id`, `state`, `older_than_ms`, `limit`) on the primitives under `prefix`.
// Throws invalid_argument for a missing or bad parameter, and as the parts' calls do.
[[nodiscard]] action_result run_action(connection_pool& pool, const std::string& prefix,
                                       std::string_view action, const http_request& req,
                                       std::size_t cap);

}  // namespace redcoord::detail
