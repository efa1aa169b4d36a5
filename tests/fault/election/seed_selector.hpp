#pragma once
// UNSAFE, TEST-ONLY: the master_selector algorithm (docs/election.md) read literally, to reproduce
// its two-leader cases next to the hardened master_selector. Separate INCR and EXPIRE commands
// (a crash between them leaves a selector without expiry), no holder identity, no epoch, no
// local deadline: a candidate is leader from a round that returned true until its next round.

#include <redcoord/core/pool.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace election_test {

class seed_selector {
public:
    seed_selector(redcoord::connection_pool& pool, std::string key, std::chrono::milliseconds term)
        : pool_(&pool), key_(std::move(key)), term_(term) {}

    // The algorithm's master(): returns whether this candidate is (still) the leader.
    bool master() {
        const std::int64_t selector = pool_->command({"INCR", key_}).integer();
        if (selector == 1) {
            local_selector_ = selector;    // initial / restarted
        } else if (local_selector_ > 0) {  // I was the master before
            if (local_selector_ > selector)
                local_selector_ = 0;  // lost, maybe the db failed over
            else
                local_selector_ = selector;  // continue to be the master
        }
        if (local_selector_ > 0) pool_->command({"PEXPIRE", key_, std::to_string(term_.count())});
        return local_selector_ > 0;
    }
    // Points the candidate at another server (as a client does after a failover).
    void use(redcoord::connection_pool& pool) { pool_ = &pool; }

private:
    redcoord::connection_pool* pool_;
    std::string key_;
    std::chrono::milliseconds term_;
    std::int64_t local_selector_ = 0;
};

}  // namespace election_test
