#pragma once
// The driver of wait_policy: one acquire call's attempts, release notifications and
// sleeps (the decisions are the policy's, see wait_policy.hpp).

#include <redcoord/core/detail/release_waiter.hpp>

#include "wait_policy.hpp"

#include <chrono>
#include <functional>

namespace redcoord::detail {

// Tries `attempt` until it succeeds (true), the deadline passes or retry_count attempts were
// made (false). `attempt(what, why)` returns true when acquired and otherwise fills `why`;
// its exceptions propagate. `waiter()` returns the object's release_waiter (started lazily).
bool acquire_loop(std::chrono::steady_clock::time_point deadline, const wait_settings& ws,
                  const std::function<release_waiter&()>& waiter,
                  const std::function<bool(ask what, refusal& why)>& attempt);

}  // namespace redcoord::detail
