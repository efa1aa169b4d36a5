#pragma once
// Who hears of a leader_elector's state changes besides its slots: the asynchronous waits of
// async.hpp. Internal to the election part.

#include <redcoord/election/leader_elector.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace redcoord {

class runtime;

namespace detail {

/// The elector's state at one transition, as a wait needs it.
struct leadership_news {
    /// The current leadership (epoch 0: not leading).
    leader_elector::leadership now;
    /// The elector stopped (or is being destroyed): no leadership comes from it until a new
    /// start().
    bool stopped = false;
    /// The latest round's failure, or null.
    std::exception_ptr round_error;
};

/// The elector's watchers. Shared with the waits, so a wait that ends after the elector is
/// gone still unregisters safely.
///
/// Thread-safety: every member function may be called from any thread. notify() runs the
/// watchers under this object's mutex: a watcher must only hand the news on (post it).
class leadership_watchers {
public:
    using watcher = std::function<void(const leadership_news&)>;

    std::uint64_t add(watcher w) {
        std::lock_guard g(mu_);
        const auto id = ++next_;
        fns_.emplace(id, std::move(w));
        count_.store(fns_.size(), std::memory_order_relaxed);
        return id;
    }
    void remove(std::uint64_t id) noexcept {
        std::lock_guard g(mu_);
        fns_.erase(id);
        count_.store(fns_.size(), std::memory_order_relaxed);
    }
    /// Watchers registered now (tests: a finished wait leaves none).
    [[nodiscard]] std::size_t size() const noexcept {
        return count_.load(std::memory_order_relaxed);
    }
    void notify(const leadership_news& n) noexcept {
        std::lock_guard g(mu_);
        for (auto& [id, fn] : fns_) {
            try {
                fn(n);
            } catch (...) {
                // A post that cannot allocate loses one wake-up; the wait's timeout still ends it.
            }
        }
    }

private:
    std::mutex mu_;
    std::map<std::uint64_t, watcher> fns_;
    std::uint64_t next_ = 0;
    std::atomic<std::size_t> count_{0};
};

/// What the election part's internals reach in a leader_elector.
struct elector_access {
    /// The runtime of the elector's pool.
    static runtime& runtime_of(leader_elector& e);
    /// The same, shared (keeps the runtime and its event loop alive).
    static std::shared_ptr<runtime> shared_runtime(leader_elector& e);
    /// The elector's watchers (the same object for the elector's whole life).
    static std::shared_ptr<leadership_watchers> watchers(leader_elector& e);
    /// Registers `w` (its id goes to `id` before any notification can reach it) and returns
    /// the state at this instant, atomically with the registration: no transition falls
    /// between them.
    static leadership_news watch(leader_elector& e, std::uint64_t& id,
                                 leadership_watchers::watcher w);
};

}  // namespace detail
}  // namespace redcoord
