#pragma once
// Seams for tests that must hit a race window deterministically; null (no cost but one atomic
// load) in production. Not installed, not part of the API.

#include <atomic>
#include <string>

namespace redcoord::detail {

/// Called on a leader_elector's campaign thread with its identity after the hold-back check
/// and before the round takes round_mu: the window of review m1.
inline std::atomic<void (*)(const std::string& identity)> election_before_round{nullptr};

}  // namespace redcoord::detail
