#pragma once
/// @file
/// Running a Lua script over an async_link: EVALSHA, and EVAL when the server answers
/// NOSCRIPT. Internal to redcoord; not a stable API.

#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/script.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// One script call: its script (alive as long as the call) and its KEYS and ARGV.
struct script_call {
    const script* lua = nullptr;
    std::vector<std::string> keys;
    std::vector<std::string> args;
};

/// Sends `call` on `link` as EVALSHA, again as EVAL when the reply is NOSCRIPT (a flushed or
/// restarted server), with `deadline` for each; `h` runs exactly once on the link's strand
/// with the final outcome (an error reply other than NOSCRIPT included). While the command is
/// in flight only its encoded EVALSHA is kept (the EVAL is made from it), not `call`'s keys
/// and arguments: 10,000 waiters' attempts in flight at once are a burst of memory.
void exec_script(const std::shared_ptr<async_link>& link, script_call call,
                 async_link::clock_type::time_point deadline, async_link::handler h);

/// Makes one script call, each time exec_script() below sends it.
using script_call_source = std::function<script_call()>;

/// The same for a caller that keeps what its call is made from until the reply anyway (a
/// lock's round, until its verdict): `source` makes the call for the EVALSHA and, on NOSCRIPT,
/// again for the EVAL, so nothing of the command stays in memory once it is written. A burst
/// of attempts then leaves no encoded bytes behind, between the allocations the waits keep,
/// as holes the allocator cannot give back. `source` runs first on the calling thread, then
/// (on NOSCRIPT) on the link's strand: what it reads must not change meanwhile.
void exec_script(const std::shared_ptr<async_link>& link, script_call_source source,
                 async_link::clock_type::time_point deadline, async_link::handler h);

}  // namespace redcoord::detail

REDCOORD_API_END
