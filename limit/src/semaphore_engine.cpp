#include "semaphore_engine.hpp"

#include <algorithm>
#include <vector>

namespace redcoord::detail {

namespace {
void drop_ended(semaphore_state& s, std::int64_t now_us) {
    std::erase_if(s.leases, [&](const auto& l) { return l.second <= now_us; });
}
}  // namespace

std::string semaphore_member(const std::string& token, std::uint64_t i) {
    return token + ":" + std::to_string(i);
}

semaphore_acquired semaphore_acquire(semaphore_state& s, std::int64_t now_us,
                                     const std::string& token, std::uint64_t n, std::uint64_t limit,
                                     std::int64_t ttl_us, const semaphore_asker& who) {
    drop_ended(s, now_us);
    std::erase_if(s.waiters, [&](const auto& w) { return w.second <= now_us; });
    const auto used = static_cast<std::uint64_t>(s.leases.size());
    const bool queued = !who.waiter_id.empty() && s.waiters.contains(who.waiter_id);
    bool admit = false;
    if (who.fifo) {
        // queue_head(): dead waiters other than the asker leave the head.
        while (!s.queue.empty() && s.queue.front() != who.waiter_id &&
               !s.waiters.contains(s.queue.front()))
            s.queue.erase(s.queue.begin());
        admit = used + n <= limit && (s.queue.empty() || s.queue.front() == who.waiter_id);
    } else {
        const auto others = static_cast<std::uint64_t>(s.waiters.size()) - (queued ? 1 : 0);
        // A queued waiter takes what is free; anyone else leaves a permit for each queued
        // waiter.
        admit = used + (queued ? n : n + others) <= limit;
    }
    semaphore_acquired r;
    if (admit) {
        if (queued) s.waiters.erase(who.waiter_id);
        if (who.fifo && !s.queue.empty() && s.queue.front() == who.waiter_id)
            s.queue.erase(s.queue.begin());
        for (std::uint64_t i = 1; i <= n; ++i)
            s.leases[semaphore_member(token, i)] = now_us + ttl_us;
        // next_fence: a counter created anew starts at the server's time.
        s.fence = s.fence == 0 ? now_us : s.fence + 1;
        r.acquired = true;
        r.fencing_token = s.fence;
        r.held = used + n;
        return r;
    }
    r.held = used;
    if (n > limit) return r;  // never fits (the driver refuses such n before sending)
    // Enough leases must end: the (used + n - limit)-th earliest end.
    std::vector<std::int64_t> ends;
    for (const auto& l : s.leases) ends.push_back(l.second);
    std::sort(ends.begin(), ends.end());
    // Refused with room (others queued): no lease end to wait for, only their turns.
    const auto i = used + n > limit ? static_cast<std::size_t>(used + n - limit - 1) : ends.size();
    r.next_free_us = i < ends.size() ? ends[i] - now_us : 0;
    if (!who.waiter_id.empty()) {
        s.waiters[who.waiter_id] =
            now_us + (r.next_free_us > 0 ? r.next_free_us : who.retry_us) + who.grace_us;
        // A waiter not queued (new, or whose entry lapsed) goes to the back.
        if (who.fifo && !queued) {
            std::erase(s.queue, who.waiter_id);
            s.queue.push_back(who.waiter_id);
        }
    }
    return r;
}

std::uint64_t semaphore_release(semaphore_state& s, const std::string& token, std::uint64_t n) {
    std::uint64_t removed = 0;
    for (std::uint64_t i = 1; i <= n; ++i) removed += s.leases.erase(semaphore_member(token, i));
    return removed;
}

bool semaphore_extend(semaphore_state& s, std::int64_t now_us, const std::string& token,
                      std::uint64_t n, std::int64_t ttl_us) {
    drop_ended(s, now_us);
    for (std::uint64_t i = 1; i <= n; ++i) {
        if (!s.leases.contains(semaphore_member(token, i))) {
            (void)semaphore_release(s, token, n);
            return false;
        }
    }
    for (std::uint64_t i = 1; i <= n; ++i) s.leases[semaphore_member(token, i)] = now_us + ttl_us;
    return true;
}

std::uint64_t semaphore_live(const semaphore_state& s, std::int64_t now_us) {
    return static_cast<std::uint64_t>(std::count_if(
        s.leases.begin(), s.leases.end(), [&](const auto& l) { return l.second > now_us; }));
}

}  // namespace redcoord::detail
