#pragma once
/// @file
/// Running a Lua script over an async_link: EVALSHA, and EVAL when the server answers
/// NOSCRIPT. Internal to redcoord; not a stable API.

#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/script.hpp>

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
/// with the final outcome (an error reply other than NOSCRIPT included).
inline void exec_script(const std::shared_ptr<async_link>& link, script_call call,
                        async_link::clock_type::time_point deadline, async_link::handler h,
                        bool as_eval = false) {
    std::vector<std::string> argv;
    argv.reserve(3 + call.keys.size() + call.args.size());
    argv.emplace_back(as_eval ? "EVAL" : "EVALSHA");
    argv.push_back(as_eval ? call.lua->source() : call.lua->sha1());
    argv.push_back(std::to_string(call.keys.size()));
    for (const auto& k : call.keys) argv.push_back(k);
    for (const auto& a : call.args) argv.push_back(a);
    link->exec(std::move(argv), deadline,
               [link, call = std::move(call), deadline, h = std::move(h),
                as_eval](link_outcome o) mutable {
                   if (!as_eval && o.result.answered() && o.result.value->is_error() &&
                       error_code_is(o.result.value->text(), "NOSCRIPT"))
                       return exec_script(link, std::move(call), deadline, std::move(h), true);
                   h(std::move(o));
               });
}

}  // namespace redcoord::detail

REDCOORD_API_END
