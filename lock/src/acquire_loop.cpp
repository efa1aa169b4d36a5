#include "acquire_loop.hpp"

#include <redcoord/core/token.hpp>

#include <algorithm>
#include <thread>

namespace redcoord::detail {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;
using type = wait_action::type;

bool acquire_loop(clock_type::time_point deadline, const wait_settings& ws,
                  const std::function<release_waiter&()>& waiter,
                  const std::function<bool(ask, refusal&)>& attempt) {
    wait_policy policy(ws, deadline,
                       [](std::uint64_t lo, std::uint64_t hi) { return random_between(lo, hi); });
    release_waiter* w = nullptr;
    std::uint64_t seen = 0;  // the waiter's generation, read before the attempt it guards
    auto next = policy.start(clock_type::now());
    for (;;) {
        switch (next.what_to_do) {
            case type::done: return next.acquired;
            case type::attempt: {
                refusal why;
                const bool got = attempt(next.what, why);
                next = policy.on_attempt(got, why, clock_type::now(), w && w->live());
                break;
            }
            case type::subscribe: {
                w = &waiter();
                bool live = false;
                const auto left =
                    std::chrono::duration_cast<milliseconds>(deadline - clock_type::now());
                seen = w->arm(std::clamp(left, milliseconds(0), milliseconds(1000)), live);
                next = policy.on_subscribed(clock_type::now());
                break;
            }
            case type::wait: {
                const bool woke = w->wait(seen, next.until);
                seen = w->generation();
                next = policy.on_waited(woke, clock_type::now());
                break;
            }
            case type::pause:
                std::this_thread::sleep_until(next.until);
                if (next.forget_releases && w) seen = w->generation();
                next = policy.on_paused(clock_type::now());
                break;
        }
    }
}

}  // namespace redcoord::detail
