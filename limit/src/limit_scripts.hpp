#pragma once
// The limiters' scripts (sources in limit/src/lua/). Every value travels as KEYS/ARGV.

#include <redcoord/core/script.hpp>

#include <vector>

namespace redcoord::detail {

// gcra.lua: KEYS[1] the TAT; ARGV interval us, burst, cost.
const script& gcra_script();
// window_log.lua: KEYS[1] the log, KEYS[2] its sequence; ARGV limit, window us, cost.
const script& window_log_script();
// semaphore_acquire.lua (after next_fence and queue_head): KEYS holders, fence, waiters, fifo
// list; ARGV token, n, permits, ttl ms, waiter id, longest sleep ms, grace ms, "1" for fifo.
const script& semaphore_acquire_script();
// semaphore_leave.lua: KEYS holders, waiters, fifo list; ARGV waiter id. Publishes.
const script& semaphore_leave_script();
// semaphore_release.lua: KEYS holders, waiting flag; ARGV token, n. Publishes.
const script& semaphore_release_script();
// semaphore_extend.lua: KEYS holders, waiting flag; ARGV token, n, ttl ms. Publishes.
const script& semaphore_extend_script();
// rwlock_read.lua / rwlock_write.lua (after next_fence): KEYS readers, fence, writer, intents,
// waiting readers; ARGV token, ttl ms, waiter id, longest sleep ms, grace ms.
const script& rwlock_read_script();
const script& rwlock_write_script();
// rwlock_release.lua: KEYS readers, writer, intents, waiting; ARGV token, 'r'|'w'. Publishes.
const script& rwlock_release_script();
// rwlock_extend.lua: KEYS readers, writer; ARGV token, 'r'|'w', ttl ms.
const script& rwlock_extend_script();
// rwlock_leave.lua: KEYS readers, intents, waiting; ARGV waiter id. Publishes.
const script& rwlock_leave_script();

// All of the above: for the test that loads every script on a server.
std::vector<const script*> limit_scripts();

}  // namespace redcoord::detail
