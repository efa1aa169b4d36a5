#pragma once
// Fault injection shared by the sentinel fault tests: make the next writes to the master
// unreplicated, then kill it, so the promoted replica lacks them (the Redlock page's failover race).

#include <redcoord/core/errors.hpp>
#include <redcoord/testing/local_sentinel.hpp>

#include <signal.h>

#include <chrono>
#include <thread>
#include <vector>

namespace redcoord::sentinel_test {

/// Cuts the master's replication links so the next writes stay on the master only:
/// SIGSTOP every replica (it cannot reconnect), then CLIENT KILL TYPE replica on the master.
/// Call heal_after_kill() soon after (replicas paused longer than down-after are not promoted).
class replication_cut {
public:
    explicit replication_cut(testing::local_sentinel& svc)
        : svc_(svc), master_(svc.master_address()) {
        for (auto& s : svc_.servers())
            if (s->address() != master_ && s->running()) {
                s->pause();
                paused_.push_back(s.get());
            }
        (void)svc_.server(master_)->command({"CLIENT", "KILL", "TYPE", "replica"});
    }
    /// SIGKILLs the master (writes made since the cut are gone with it) and resumes the
    /// replicas, which find their master dead and wait for Sentinel to promote one of them.
    host_port kill_master_and_resume() {
        svc_.server(master_)->kill();
        for (auto* s : paused_) s->resume();
        paused_.clear();
        return master_;
    }
    ~replication_cut() {
        for (auto* s : paused_) s->resume();
    }
    [[nodiscard]] const host_port& master() const noexcept { return master_; }

private:
    testing::local_sentinel& svc_;
    host_port master_;
    std::vector<testing::local_server*> paused_;
};

/// Polls `f` every 20 ms until it returns true or `within` passes; a redcoord::error thrown by
/// `f` (a failover in progress) counts as false.
template <class F>
bool eventually_ok(std::chrono::milliseconds within, F f) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
        try {
            if (f()) return true;
        } catch (const error&) {}
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

}  // namespace redcoord::sentinel_test
