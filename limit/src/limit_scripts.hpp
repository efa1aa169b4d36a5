#pragma once
// The limiters' scripts (sources in limit/src/lua/). Every value travels as KEYS/ARGV.

#include <redcoord/core/script.hpp>

namespace redcoord::detail {

// gcra.lua: KEYS[1] the TAT; ARGV interval us, burst, cost.
const script& gcra_script();
// window_log.lua: KEYS[1] the log, KEYS[2] its sequence; ARGV limit, window us, cost.
const script& window_log_script();

}  // namespace redcoord::detail
