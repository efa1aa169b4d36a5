#pragma once
// Records a leader_elector's callbacks for checks: order, thread, concurrency.

#include <redcoord/election/leader_elector.hpp>

#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace election_test {

struct event {
    char kind;                // 'E' elected, 'R' revoked, 'C' leader changed
    std::uint64_t epoch = 0;  // for 'E'
    redcoord::revoke_reason reason{};
    std::string identity;  // for 'C' ("" = none)
    std::chrono::steady_clock::time_point at;
};

class event_log {
public:
    explicit event_log(redcoord::leader_elector& e) : elector_(e) {
        conns_.emplace_back(e.on_elected([this](std::uint64_t ep) { add({'E', ep, {}, {}, {}}); }));
        conns_.emplace_back(e.on_revoked([this](redcoord::revoke_reason r) {
            add({'R', 0, r, {}, {}});
        }));
        conns_.emplace_back(e.on_leader_changed([this](std::optional<std::string> id) {
            add({'C', 0, {}, id.value_or(""), {}});
        }));
    }
    // A disconnect does not wait for a slot already running, so the elector is stopped (its
    // callback thread joined) before the log's members go away.
    ~event_log() { elector_.stop(); }
    event_log(const event_log&) = delete;
    event_log& operator=(const event_log&) = delete;

    bool wait_for(char kind, std::size_t count, std::chrono::milliseconds t) {
        std::unique_lock lk(mu_);
        return cv_.wait_for(lk, t, [&] { return count_locked(kind) >= count; });
    }
    std::vector<event> events() {
        std::lock_guard g(mu_);
        return events_;
    }
    std::size_t count(char kind) {
        std::lock_guard g(mu_);
        return count_locked(kind);
    }
    bool concurrent() const { return concurrent_; }
    std::size_t threads() {
        std::lock_guard g(mu_);
        return thread_ids_.size();
    }

private:
    void add(event e) {
        if (inside_.fetch_add(1) != 0) concurrent_ = true;
        // Give an overlapping delivery a chance to show itself.
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        e.at = std::chrono::steady_clock::now();
        {
            std::lock_guard g(mu_);
            events_.push_back(e);
            auto id = std::this_thread::get_id();
            if (std::find(thread_ids_.begin(), thread_ids_.end(), id) == thread_ids_.end())
                thread_ids_.push_back(id);
        }
        inside_.fetch_sub(1);
        cv_.notify_all();
    }
    std::size_t count_locked(char kind) const {
        return static_cast<std::size_t>(std::count_if(
            events_.begin(), events_.end(), [&](const event& e) { return e.kind == kind; }));
    }
    redcoord::leader_elector& elector_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<event> events_;
    std::vector<std::thread::id> thread_ids_;
    std::atomic<int> inside_{0};
    std::atomic<bool> concurrent_{false};
    std::vector<boost::signals2::scoped_connection> conns_;
};

// elected/revoked strictly alternate, starting with elected; epochs strictly increase.
inline ::testing::AssertionResult paired(const std::vector<event>& ev) {
    bool leading = false;
    std::uint64_t last = 0;
    for (const auto& e : ev) {
        if (e.kind == 'E') {
            if (leading) return ::testing::AssertionFailure() << "elected twice without revoked";
            if (e.epoch <= last)
                return ::testing::AssertionFailure() << "epoch did not increase: " << e.epoch;
            last = e.epoch;
            leading = true;
        } else if (e.kind == 'R') {
            if (!leading) return ::testing::AssertionFailure() << "revoked without elected";
            leading = false;
        }
    }
    return ::testing::AssertionSuccess();
}

}  // namespace election_test
