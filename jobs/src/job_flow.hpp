#pragma once
// Flows on the client side (docs/jobs.md#flows): the checks and the order of the jobs of one add
// call, before anything is sent, and the server's refusals as typed errors. No I/O.

#include <redcoord/jobs/job_queue.hpp>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace redcoord::detail {

/// Checks one job's dependencies: at most max_job_dependencies, valid names, no duplicates.
/// @throws too_many_dependencies, invalid_argument for a bad name.
void check_dependencies(const job_options& o);

/// The order in which the jobs of one call are sent: each after the jobs of the call it
/// depends on (the server takes a dependency on a later job for an unknown one), otherwise in
/// the given order. `ids[i]` is job i's id, `deps[i]` its dependencies. A repeated id counts
/// at its first place. Iterative: a chain of any length is fine.
/// @throws dependency_cycle naming the cycle's jobs.
std::vector<std::size_t> flow_order(const std::vector<std::string>& ids,
                                    const std::vector<std::vector<std::string>>& deps);

/// The jobs of a flow, children before their parent (depth first), each parent depending on
/// its children besides its own depends_on; empty ids get random ones.
std::vector<std::pair<std::string, job_options>> flatten_flow(const flow_job& root);

/// Throws the typed error for an add script's refusal of the jobs `sent` (in the order sent):
/// `UNKNOWNDEP <job place> <dependency place>` (from 1), `TOOMANYDEPS <job place>`; returns
/// for any other text.
void throw_if_dependency_refusal(const std::string& text,
                                 const std::vector<std::pair<std::string, job_options>>& sent);

}  // namespace redcoord::detail
