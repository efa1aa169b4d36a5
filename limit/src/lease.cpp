#include "lease.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/token.hpp>

#include <algorithm>
#include <random>

namespace redcoord::detail {

using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

void lease_clock::start(steady::time_point sent_at, milliseconds ttl) {
    valid_until = sent_at + ttl - clock_drift(ttl, drift_factor);
}

bool lease_clock::settle(bool extended, steady::time_point sent_at, milliseconds ttl) {
    if (extended)
        start(sent_at, ttl);
    else
        lost = true;
    return extended;
}

std::optional<steady::time_point> lease_clock::watchdog_tick(milliseconds ttl,
                                                             const std::function<bool()>& extend) {
    try {
        if (extend()) return now() + ttl / 3;
        return std::nullopt;  // the lease had ended: lost
    } catch (...) {
        // Unconfirmed (reply lost, server away): retry while the validity lasts.
    }
    const auto t = now();
    if (t >= valid_until) {
        lost = true;
        return std::nullopt;
    }
    return std::min(valid_until, t + std::max(ttl / 10, milliseconds(1)));
}

milliseconds refused_sleep(const wait_policy& policy, milliseconds next_free, bool live) {
    auto sleep = policy.max_retry;
    if (next_free > milliseconds::zero()) {
        sleep = next_free + milliseconds(1);
        if (policy.retry_jitter > milliseconds::zero()) {
            thread_local std::minstd_rand rnd{std::random_device{}()};
            sleep += milliseconds(std::uniform_int_distribution<milliseconds::rep>(
                0, policy.retry_jitter.count())(rnd));
        }
    }
    if (!live || policy.refresh) sleep = std::min(sleep, policy.max_retry);
    return sleep;
}

bool wait_for_release(const std::function<release_waiter&()>& waiter, steady::time_point deadline,
                      wait_policy policy,
                      const std::function<wait_attempt(const std::string&)>& attempt,
                      const std::function<void(const std::string&)>& leave) {
    const auto waiter_id = random_token();  // this call's place among the waiters
    bool queued = false;
    for (;;) {
        const auto left = time_left<milliseconds>(deadline);
        if (left <= milliseconds::zero()) {
            if (attempt(queued ? waiter_id : std::string()).got) return true;
            if (queued) leave(waiter_id);
            return false;
        }
        bool live = false;
        auto& w = waiter();
        const auto seen = w.arm(std::clamp(left, milliseconds(0), milliseconds(1000)), live);
        const auto r = attempt(waiter_id);
        if (r.got) return true;
        queued = true;
        // A lease that ends publishes nothing: wake when the awaited one ends, or on a release.
        const auto sleep = refused_sleep(policy, r.next_free, live);
        (void)w.wait(seen, std::min(deadline, steady::now() + sleep));
    }
}

}  // namespace redcoord::detail
