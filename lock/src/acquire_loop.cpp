#include "acquire_loop.hpp"

#include "hold_common.hpp"

#include <algorithm>
#include <thread>

namespace redcoord::detail {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {
void sleep_until_min(clock_type::time_point a, clock_type::time_point b) {
    std::this_thread::sleep_until(std::min(a, b));
}
}  // namespace

bool acquire_loop(clock_type::time_point deadline, const wait_settings& ws, contention_memory& memory,
                  const std::function<release_waiter&()>& waiter,
                  const std::function<bool(ask, refusal&)>& attempt) {
    std::size_t attempts = 0;
    refusal r;
    auto again = [&](ask what) {
        ++attempts;
        r = refusal{};
        if (!attempt(what, r)) return false;
        // A holder that won a busy lock keeps its contention level fresh while it re-acquires:
        // once someone else gets in, it resumes backing off instead of marking and waking.
        if (memory.losses > 0) memory.at = clock_type::now();
        return true;
    };
    auto over = [&] {
        return clock_type::now() >= deadline || (ws.retry_count > 0 && attempts >= ws.retry_count);
    };

    // A call that starts soon after this object lost a race resumes backing off.
    const bool resume = memory.losses > 0 && clock_type::now() - memory.at < 2 * ws.contention_backoff;
    const bool will_wait = clock_type::now() < deadline;
    if (again(resume ? ask::holder : will_wait ? ask::mark : ask::nothing)) return true;

    release_waiter* w = nullptr;
    std::uint64_t seen = 0;  // the waiter's generation, read before the attempt it guards
    auto subscribe = [&] {
        w = &waiter();
        bool live = false;
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - clock_type::now());
        seen = w->arm(std::clamp(left, milliseconds(0), milliseconds(1000)), live);
    };
    // Consecutive races lost to a busy lock, and the holding that refused the last of them.
    unsigned losses = 0;
    std::string last_holder;
    // The pause after the last attempt that found a majority down (zero: it did not).
    clock_type::duration down_pause{};
    auto remember = [&] {
        memory.losses = losses;
        memory.holder = last_holder;
        memory.at = clock_type::now();
    };
    if (resume && !over()) {
        subscribe();
        losses = memory.losses;
        last_holder = memory.holder;
    }

    while (!over()) {
        const auto now = clock_type::now();
        if (!w) {
            // Subscribe, then retry: the holder may have released before the subscription.
            subscribe();
            if (ws.jitter_first_retry) sleep_until_min(clock_type::now() + jitter(ws.retry_jitter), deadline);
            if (again(ask::mark)) return true;
            continue;
        }
        if (r.down) {
            // A majority down: wait for it with a growing pause (never spinning), earlier if
            // a release is announced meanwhile.
            down_pause = std::min<clock_type::duration>(
                std::max<clock_type::duration>(down_pause * 2, ws.retry_delay), ws.max_retry_interval);
            (void)w->wait(seen, std::min(deadline, now + down_pause + jitter(ws.retry_jitter)));
            seen = w->generation();
            if (again(ask::mark)) return true;
            continue;
        }
        down_pause = clock_type::duration::zero();
        if (losses == 0 && !r.one_holder) {
            // Split vote, failing nodes or an attempt given back: retry after a random delay
            // (seed 004, step 5), earlier if a release is announced meanwhile.
            (void)w->wait(seen, std::min(deadline, now + ws.retry_delay + jitter(ws.retry_jitter)));
            seen = w->generation();
            if (again(ask::mark)) return true;
            continue;
        }
        if (losses == 0) {
            // Our refusal marked the holder's key: sleep until its release, or its PTTL as a
            // fallback (kept short while no notification link is up).
            clock_type::duration slice = ws.max_retry_interval;
            if (r.pttl >= 0) {
                slice = milliseconds(r.pttl) + jitter(ws.retry_jitter);
                if (!w->live()) slice = std::min<clock_type::duration>(slice, ws.max_retry_interval);
            }
            const bool woke = w->wait(seen, std::min(deadline, now + slice));
            // Waiters woken together spread out a little so one of them wins outright.
            if (woke) sleep_until_min(clock_type::now() + jitter(ws.wake_jitter), deadline);
            seen = w->generation();
            if (again(ask::mark)) return true;
            if (woke && ws.contention_backoff.count() > 0) {  // released and taken again at once, or caught mid-hand-over
                losses = 1;
                last_holder.clear();
                remember();
            }
            continue;
        }
        // Busy lock: back off, deaf to releases, then look before trying.
        sleep_until_min(now + contention_backoff(losses, ws.contention_backoff), deadline);
        seen = w->generation();
        refusal seen_holder;
        (void)attempt(ask::look, seen_holder);
        if (!seen_holder.one_holder) {
            if (again(ask::holder)) return true;
            ++losses;  // someone else got in first
            last_holder.clear();
        } else if (seen_holder.holder == last_holder) {
            // The same holding outlived the whole back-off: the lock has gone quiet. Mark it
            // and go back to sleeping until its release.
            losses = 0;
            if (!over() && again(ask::mark)) return true;
        } else {
            ++losses;
            last_holder = std::move(seen_holder.holder);
        }
        remember();
    }
    return false;
}

}  // namespace redcoord::detail
