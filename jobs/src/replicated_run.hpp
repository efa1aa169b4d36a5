#pragma once
// A job queue's writes that job_queue_options::replication asks to confirm (adds, a scheduler's
// ticks): the script and WAIT in one write on the connection of the queue's slot.

#include <redcoord/core/pool.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/jobs/job_queue.hpp>

#include <span>
#include <string>
#include <string_view>

namespace redcoord::detail {

/// The script's reply, how many replicas acknowledged it, and whether that is the number
/// `opts` asks for (always true when it asks for none).
struct replicated_reply_of_queue {
    reply result;
    std::size_t acks = 0;
    bool confirmed = true;
};

/// Runs `s` on the master of `keys.front()`'s slot; with opts.replication.replicas > 0, WAITs
/// for them within opts.replication.timeout. @throws as script::run() and run_then_wait().
replicated_reply_of_queue run_replicated(connection_pool& pool, const job_queue_options& opts,
                                         const script& s, std::span<const std::string_view> keys,
                                         std::span<const std::string_view> args);

/// The replication_timeout of an unconfirmed write: `what` (say, "add to 'mail'") was
/// acknowledged by `acks` of opts.replication.replicas replicas within opts.replication.timeout; the master
/// has it.
[[noreturn]] void throw_unconfirmed(const std::string& what, std::size_t acks,
                                    const job_queue_options& opts);

}  // namespace redcoord::detail
