#pragma once
// The limiters' scripts (sources in limit/src/lua/). Every value travels as KEYS/ARGV.

#include <redcoord/core/script.hpp>

namespace redcoord::detail {

// gcra.lua: KEYS[1] the TAT; ARGV interval us, burst, cost.
const script& gcra_script();
// window_log.lua: KEYS[1] the log, KEYS[2] its sequence; ARGV limit, window us, cost.
const script& window_log_script();
// semaphore_acquire.lua (after next_fence): KEYS holders, fence, waiting flag; ARGV token, n,
// permits, ttl ms, "1" to wait.
const script& semaphore_acquire_script();
// semaphore_release.lua: KEYS holders, waiting flag; ARGV token, n. Publishes.
const script& semaphore_release_script();
// semaphore_extend.lua: KEYS holders, waiting flag; ARGV token, n, ttl ms. Publishes.
const script& semaphore_extend_script();

}  // namespace redcoord::detail
