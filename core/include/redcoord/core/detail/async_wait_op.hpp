#pragma once
/// @file
/// The skeleton every waiting async_* operation of redcoord shares (locks, limiters,
/// barriers, queue pop): a strand of the runtime's event loop, one steady_timer for the
/// waits, a wake notice that ends a wait early, cancellation, requests over a pipelined link
/// whose replies continue on the strand, and a completion that runs exactly once.
/// Internal to redcoord; not a stable API.

#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/async_operation.hpp>
#include <redcoord/core/detail/async_script.hpp>
#include <redcoord/core/export.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// Base of an asynchronous operation that attempts, waits for a wake notice or a time, and
/// attempts again, completing with `(std::exception_ptr, std::optional<T>)`.
///
/// The derived class says what to do: begin() (the first step, on the strand), and
/// optionally on_cancel() (what a cancellation does; by default it ends a wait at once, and
/// the continuation sees cancelled()) and on_complete() (releases taken before the
/// completion runs). Everything of the operation runs on its strand, one step at a time;
/// only cancel() and notify() may be called from other threads.
///
/// Guarantees: the completion runs exactly once (complete() after the first is ignored, and
/// no continuation runs after it); a notice that comes while no wait is armed is kept and
/// ends the next wait at once, so a wake between an attempt and its wait is never lost
/// (clear_notice() before an attempt drops older ones); cancel() before begin() ran, during
/// a wait or during a request is honoured as the derived class's on_cancel() says. When the
/// event loop is destroyed with the operation pending, its handlers are destroyed unrun and
/// so is the completion (a future's promise is then broken): nothing waits for it.
template <class T>
class async_wait_op : public async_operation,
                      public std::enable_shared_from_this<async_wait_op<T>> {
public:
    using clock_type = std::chrono::steady_clock;
    using value_type = T;

    /// An operation on `io` that completes through `done`; `what` names it in the
    /// operation_aborted failure ("async_pop").
    async_wait_op(boost::asio::io_context& io, async_completion<T> done, const char* what)
        : strand_(boost::asio::make_strand(io)), timer_(strand_), done_(std::move(done)),
          what_(what) {}
    ~async_wait_op() override = default;
    async_wait_op(const async_wait_op&) = delete;
    async_wait_op& operator=(const async_wait_op&) = delete;

    /// Posts begin() to the strand; call once, after construction (shared_from_this).
    void start() {
        boost::asio::post(strand_, [self = this->shared_from_this()] {
            if (!self->completed_) self->begin();
        });
    }

    /// Thread-safe; harmless once completed. The first call sets cancelled() and runs
    /// on_cancel() on the strand.
    void cancel() noexcept override {
        try {
            boost::asio::post(strand_, [self = this->shared_from_this()] {
                if (self->completed_ || self->cancelled_) return;
                self->cancelled_ = true;
                self->on_cancel();
            });
        } catch (...) {}
    }

    /// A wake notice (a release, a push, a signal), from any thread: ends a wakeable wait now,
    /// or, when none is armed, the next one at once.
    void notify() {
        boost::asio::post(strand_, [self = this->shared_from_this()] { self->noticed(); });
    }

    /// A callable that notifies this operation while it exists, for a watch or a listener
    /// that may outlive it (it only posts; it never keeps the operation alive).
    [[nodiscard]] std::function<void()> waker() {
        return [weak = this->weak_from_this()] {
            if (auto self = weak.lock()) self->notify();
        };
    }

protected:
    /// The first step, on the strand (not run when cancelled and completed before it).
    virtual void begin() = 0;
    /// What a cancellation does, on the strand, once: by default it ends a wait at once (its
    /// continuation runs and sees cancelled()); a request in flight ends when its reply comes.
    virtual void on_cancel() { end_wait(); }
    /// Runs on the strand just before the completion: unwatch, unregister, give back gates.
    virtual void on_complete() {}

    /// Waits until `until` or, when `wakeable`, a notice; then runs `then(woke)` on the strand
    /// (woke: a notice ended it) unless the operation completed meanwhile. A notice kept
    /// from before ends a wakeable wait at once, and so does a cancellation (synchronously).
    void wait_until(clock_type::time_point until, std::function<void(bool woke)> then,
                    bool wakeable = true) {
        if (cancelled_) return then(false);  // a cancelled operation never waits
        if (wakeable && std::exchange(notice_, false)) return then(true);
        waiting_ = true;
        wakeable_ = wakeable;
        woke_ = false;
        timer_.expires_at(until);
        timer_.async_wait(
            [self = this->shared_from_this(), then = std::move(then)](boost::system::error_code) {
                self->waiting_ = false;
                if (self->completed_) return;
                then(std::exchange(self->woke_, false));
            });
    }

    /// Ends a wait now, if one is armed (its continuation runs with woke false).
    void end_wait() {
        if (waiting_) timer_.cancel();
    }

    /// Drops a kept notice: call before an attempt, so a notice older than it wakes nothing.
    void clear_notice() noexcept { notice_ = false; }

    /// Sends `argv` on `link` and continues with `then(outcome)` on the strand, unless the
    /// operation completed meanwhile.
    void exec(const std::shared_ptr<async_link>& link, std::vector<std::string>&& argv,
              clock_type::time_point deadline, std::function<void(link_outcome)> then) {
        link->exec(std::move(argv), deadline, on_strand(std::move(then)));
    }

    /// Runs `call` on `link` (EVALSHA, then EVAL on NOSCRIPT) and continues as exec().
    void exec(const std::shared_ptr<async_link>& link, script_call call,
              clock_type::time_point deadline, std::function<void(link_outcome)> then) {
        exec_script(link, std::move(call), deadline, on_strand(std::move(then)));
    }

    /// Runs the call `source` makes on `link` (exec_script's second form) and continues as
    /// exec().
    void exec(const std::shared_ptr<async_link>& link, script_call_source source,
              clock_type::time_point deadline, std::function<void(link_outcome)> then) {
        exec_script(link, std::move(source), deadline, on_strand(std::move(then)));
    }

    /// Completes with `failure` or `value` the first time; later calls do nothing.
    void complete(std::exception_ptr failure, std::optional<T> value) {
        if (completed_) return;
        completed_ = true;
        timer_.cancel();
        on_complete();
        auto done = std::move(done_);
        done_ = nullptr;
        done(std::move(failure), std::move(value));
    }

    /// The failure a cancelled operation completes with (operation_aborted, named `what`).
    [[nodiscard]] std::exception_ptr aborted() const { return operation_aborted(what_); }

    [[nodiscard]] bool completed() const noexcept { return completed_; }
    [[nodiscard]] bool cancelled() const noexcept { return cancelled_; }
    [[nodiscard]] bool waiting() const noexcept { return waiting_; }

    /// This operation as its derived type, for continuations that keep it alive.
    template <class D>
    [[nodiscard]] std::shared_ptr<D> self_as() {
        return std::static_pointer_cast<D>(this->shared_from_this());
    }

    boost::asio::strand<boost::asio::io_context::executor_type> strand_;
    boost::asio::steady_timer timer_;

private:
    void noticed() {
        if (completed_) return;
        if (waiting_ && wakeable_) {
            woke_ = true;
            timer_.cancel();
            return;
        }
        notice_ = true;
    }

    async_link::handler on_strand(std::function<void(link_outcome)> then) {
        return [self = this->shared_from_this(), then = std::move(then)](link_outcome o) mutable {
            // Runs on the link's strand: continue on this operation's.
            boost::asio::post(self->strand_,
                              [self, then = std::move(then), o = std::move(o)]() mutable {
                                  if (!self->completed_) then(std::move(o));
                              });
        };
    }

    async_completion<T> done_;
    const char* what_;
    bool waiting_ = false, wakeable_ = true, woke_ = false, notice_ = false;
    bool cancelled_ = false, completed_ = false;
};

}  // namespace redcoord::detail

REDCOORD_API_END
