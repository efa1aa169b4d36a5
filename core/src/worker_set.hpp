#pragma once
// Private to core: the threads of a pool that grows under load and shrinks when idle (the
// timer service's tick workers, the callback executor's workers).

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace redcoord::detail {

// A pool's live workers, the workers that ended and wait to be joined, and the rule by which
// idle workers beyond the first end: once no work has found every worker busy for
// `retire_after`. The time is the pool's, not each worker's own idle time: idle workers take
// turns at occasional work, and that must not keep every one of them alive.
// Not thread-safe: the pool's mutex guards every call (declare it GUARDED_BY that mutex).
class worker_set {
public:
    using clock_type = std::chrono::steady_clock;

    // What ended an idle worker's wait.
    enum class woke {
        needed,  // the pool's condition holds
        retire,  // this worker is surplus: it was moved to the ended ones and must return
        again,   // neither (a spurious or early wake-up): look again and wait again
    };

    explicit worker_set(std::chrono::milliseconds retire_after) noexcept
        : retire_after_(retire_after) {}

    // Work found no other worker idle, or a worker joined in: every worker is needed now.
    void all_busy() noexcept { all_busy_at_ = clock_type::now(); }

    // Starts a worker running `body`. It is known by its id before it can run, so it can find
    // itself (retire) as soon as it takes the pool's mutex.
    // @throws std::system_error when the thread cannot be started.
    template <class F>
    void start(F&& body) {
        std::thread t(std::forward<F>(body));
        const auto id = t.get_id();
        live_.emplace(id, std::move(t));
    }

    // An idle worker (the calling thread) waits on `cv`, `lock` holding the pool's mutex, until
    // `needed()`. The last worker waits for as long as it takes; the others end when the pool
    // has had a worker to spare for `retire_after`.
    template <class Pred>
    woke wait(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Pred needed) {
        if (live_.size() <= 1) {
            cv.wait(lock, needed);
            return woke::needed;
        }
        if (cv.wait_until(lock, all_busy_at_ + retire_after_, needed)) return woke::needed;
        if (live_.size() <= 1 || clock_type::now() - all_busy_at_ < retire_after_)
            return woke::again;
        retire_self();
        return woke::retire;
    }

    // Moves the calling worker to the ended ones (it returns next).
    void retire_self() {
        auto me = live_.find(std::this_thread::get_id());
        if (me == live_.end()) return;
        ended_.push_back(std::move(me->second));
        live_.erase(me);
    }

    std::size_t size() const noexcept { return live_.size(); }
    bool empty() const noexcept { return live_.empty(); }

    // The workers that ended, to join (they have returned, or are about to).
    std::vector<std::thread> take_ended() { return std::exchange(ended_, {}); }

    // Every worker, live and ended, for the pool's destructor to join without the mutex
    // (join_all); this set is left empty.
    worker_set take_all() {
        worker_set all(retire_after_);
        all.live_.swap(live_);
        all.ended_.swap(ended_);
        return all;
    }

    // Joins every worker, the ended ones first; a live one is joined after its work in
    // progress returns. A worker that is the calling thread is detached instead: the pool was
    // destroyed from its own work (the last owner of the runtime released there).
    void join_all() {
        for (auto& t : ended_) t.join();
        ended_.clear();
        for (auto& [id, t] : live_) {
            if (id == std::this_thread::get_id())
                t.detach();
            else
                t.join();
        }
        live_.clear();
    }

private:
    std::chrono::milliseconds retire_after_;
    clock_type::time_point all_busy_at_ = clock_type::now();
    std::map<std::thread::id, std::thread> live_;
    std::vector<std::thread> ended_;
};

}  // namespace redcoord::detail
