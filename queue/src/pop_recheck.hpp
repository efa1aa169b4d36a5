#pragma once
// The slow re-check of a reliable_queue object's pending async pops, one for all of them.
//
// A pop whose push channel is confirmed waits for push()'s notice. A message no notice
// announced (another client's plain LPUSH or LMOVE into the ready list) is found by a
// re-check every reliable_queue_options::async_pop_recheck. Done by each pop, N idle pops cost
// the server N attempts a period; done here, one LLEN of the ready list a period, and only
// when it finds a message are the waiting pops woken to try.

#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace redcoord::detail {

// Thread-safety: join() and leave() may be called from any thread (each pop's strand); the
// timer is touched on this object's strand only, the waiting pops under mu_.
class pop_recheck : public std::enable_shared_from_this<pop_recheck> {
public:
    // Checks `ready_key` every `period` while a pop waits; each LLEN gets `command_timeout`
    // (zero: no deadline but the link's own).
    pop_recheck(boost::asio::io_context& io, std::string ready_key,
                std::chrono::milliseconds period, std::chrono::milliseconds command_timeout);
    pop_recheck(const pop_recheck&) = delete;
    pop_recheck& operator=(const pop_recheck&) = delete;

    // A waiting pop, whose commands go on `link`: `wake` is called (from the link's strand:
    // it must only post) when a check finds the ready list not empty or cannot tell (a failed
    // LLEN: the pop's own attempt then reports the failure). The first pop starts the checks
    // on its link, the next check comes one period later. Returns the id for leave().
    std::uint64_t join(std::function<void()> wake, const std::shared_ptr<async_link>& link)
        REDCOORD_EXCLUDES(mu_);
    // The pop stopped waiting. The last one ends the checks (the timer is cancelled).
    void leave(std::uint64_t id) noexcept REDCOORD_EXCLUDES(mu_);

    // LLENs sent so far (tests).
    [[nodiscard]] std::uint64_t checks() const REDCOORD_EXCLUDES(mu_);

private:
    void schedule() REDCOORD_EXCLUDES(mu_);  // on strand_
    void check() REDCOORD_EXCLUDES(mu_);     // on strand_
    void checked(const link_outcome& o) REDCOORD_EXCLUDES(mu_);
    // The chain ends: nobody waits.
    void stop_chain() REDCOORD_REQUIRES(mu_);

    boost::asio::strand<boost::asio::io_context::executor_type> strand_;
    boost::asio::steady_timer timer_;  // on strand_ only
    std::string ready_key_;
    std::chrono::milliseconds period_, command_timeout_;

    mutable mutex mu_;
    std::map<std::uint64_t, std::function<void()>> waiting_ REDCOORD_GUARDED_BY(mu_);
    std::uint64_t next_id_ REDCOORD_GUARDED_BY(mu_) = 0;
    // A check is scheduled or in flight: the chain that join() starts when it is not.
    bool running_ REDCOORD_GUARDED_BY(mu_) = false;
    // The link of the running chain: held only while it runs, so that an idle queue object
    // keeps no socket open (a caller's io_context then runs out of work and returns).
    std::shared_ptr<async_link> link_ REDCOORD_GUARDED_BY(mu_);
    std::uint64_t checks_ REDCOORD_GUARDED_BY(mu_) = 0;
};

}  // namespace redcoord::detail
