#include "replicated_run.hpp"

#include <redcoord/core/replication.hpp>

namespace redcoord::detail {

replicated_reply_of_queue run_replicated(connection_pool& pool, const job_queue_options& opts,
                                         const script& s, std::span<const std::string_view> keys,
                                         std::span<const std::string_view> args) {
    auto c = pool.borrow_for(keys.front());
    if (opts.replication.replicas == 0) return {s.run(*c, keys, args), 0, true};
    auto w = run_then_wait(*c, s, keys, args, opts.replication.replicas, opts.replication.timeout);
    return {std::move(w.result), w.acks, w.acks >= opts.replication.replicas};
}

void throw_unconfirmed(const std::string& what, std::size_t acks, const job_queue_options& opts) {
    throw replication_timeout(what + " acknowledged by " + std::to_string(acks) + " of " +
                                  std::to_string(opts.replication.replicas) + " replicas within " +
                                  std::to_string(opts.replication.timeout.count()) +
                                  " ms (the master has it; not yet durable)",
                              acks, opts.replication.replicas);
}

}  // namespace redcoord::detail
