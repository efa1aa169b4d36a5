#pragma once
// Seams for tests that must hit a race window deterministically; null (no cost but one atomic
// load) in production. Not installed, not part of the API.

#include <atomic>
#include <string>

namespace redcoord::detail {

/// Called in a leader_elector's timer tick (the runtime's timer thread) with its identity
/// once the engine said a round is due, before the round takes round_mu: the window in which a resign and a
/// round could race.
inline std::atomic<void (*)(const std::string& identity)> election_before_round{nullptr};

}  // namespace redcoord::detail
