#pragma once
// Private to jobs: the local bound of one job's lease, sans I/O (no clock reads: every call
// takes the time). job_worker keeps one per held job and fires the job's stop token when it
// passes, whatever became of the heartbeats (failing, or stuck on a server that stopped
// answering). Tested without a server in tests/unit/jobs/job_lease_test.cpp.
//
// Why `sent + lease - margin` bounds the server's lease from below: the server sets a lease's
// end to `its now + lease` when the claim or heartbeat *runs*, which is after this side sent
// it; so as long as the two clocks advance at nearly the same rate, the server's end comes no
// sooner than `sent + lease` here. The margin allows for that rate difference as the lock does
// for its validity (Redlock's drift: `lease * drift_factor + 2 ms`). Past the bound another
// worker may have taken the job back.

#include <redcoord/core/detail/lease_schedule.hpp>

#include <chrono>

namespace redcoord::detail {

class job_lease {
public:
    using clock_type = std::chrono::steady_clock;
    using time_point = clock_type::time_point;

    // Redlock's default, as lock_options::drift_factor.
    static constexpr double default_drift_factor = 0.01;

    // `lease` > 0; `drift_factor` in [0, 0.5).
    job_lease(std::chrono::milliseconds lease, time_point claim_sent,
              double drift_factor = default_drift_factor) noexcept;

    // What is taken off `sent + lease`: `lease * drift_factor + 2 ms` (lease_schedule::drift()).
    [[nodiscard]] static std::chrono::microseconds margin(std::chrono::milliseconds lease,
                                                          double drift_factor) noexcept;

    // A heartbeat sent at `sent` was confirmed at `now`: the bound moves on to its send time,
    // unless it had passed by `now`. A lease once gone stays gone, since its stop token has
    // fired or is about to: the handler was told that the job is no longer this worker's.
    void renewed(time_point sent, time_point now) noexcept;

    // Whether the bound has passed by `now` (or passed earlier); once true, always true.
    [[nodiscard]] bool gone(time_point now) noexcept;
    [[nodiscard]] bool gone() const noexcept { return gone_; }

    // The bound: the job is surely still this worker's before it.
    [[nodiscard]] time_point until() const noexcept { return until_; }

private:
    lease_schedule schedule_;
    time_point until_;
    bool gone_ = false;
};

}  // namespace redcoord::detail
