#include <redcoord/queue/queue_worker.hpp>

#include <redcoord/core/detail/thread_name.hpp>
#include <redcoord/core/errors.hpp>

#include <condition_variable>
#include <mutex>
#include <utility>

namespace redcoord {

queue_worker::queue_worker(reliable_queue& queue, handler h, queue_worker_options opts)
    : queue_(queue), handler_(std::move(h)), opts_(opts) {
    if (!handler_) throw invalid_argument("queue_worker: empty handler");
    if (opts_.threads < 1) throw invalid_argument("queue_worker: threads must be >= 1");
    if (opts_.poll_timeout <= std::chrono::milliseconds(0))
        throw invalid_argument("queue_worker: poll_timeout must be > 0");
    if (opts_.retry_delay < std::chrono::milliseconds(0))
        throw invalid_argument("queue_worker: retry_delay must be >= 0");
}

queue_worker::~queue_worker() { stop(); }

void queue_worker::start() {
    if (running_.exchange(true)) return;
    stop_ = false;
    stop_source_ = std::stop_source();
    for (std::size_t i = 0; i < opts_.threads; ++i)
        threads_.emplace_back([this, token = stop_source_.get_token()] {
            detail::name_this_thread("rc-queue-work");
            run(token);
        });
}

void queue_worker::request_stop() noexcept {
    stop_ = true;
    // Ends pops in progress between blocks, so a long poll_timeout (even
    // milliseconds::max()) does not hold stop() up.
    stop_source_.request_stop();
}

void queue_worker::stop() noexcept {
    request_stop();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
    running_ = false;
}

queue_worker_stats queue_worker::stats() const noexcept {
    return {acked_.load(), requeued_.load(), dead_.load(),
            lost_.load(),  errors_.count(),  unsettled_.load()};
}

std::exception_ptr queue_worker::last_error() const { return errors_.last(); }

namespace {

// Waits `d` or until stop is requested, whichever comes first: a long retry_delay must not hold
// stop() up.
void pause(std::chrono::milliseconds d, const std::stop_token& stop) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lk(m);
    (void)cv.wait_for(lk, stop, d, [] { return false; });
}

}  // namespace

void queue_worker::run(std::stop_token stop) {
    // A message taken by the last ack (ack_and_pop) is handled even when stop was requested
    // meanwhile: it is in this consumer's processing list, like one a pop returned.
    std::optional<delivery> next;
    while (next || !stop_.load()) {
        std::optional<delivery> d = std::exchange(next, std::nullopt);
        if (!d) {
            try {
                d = queue_.pop(opts_.poll_timeout, stop);
            } catch (const std::exception&) {
                errors_.record();
                pause(opts_.retry_delay, stop);
                continue;
            }
        }
        if (!d) continue;
        handler_result res;
        try {
            res = handler_(*d);
        } catch (...) {
            res = handler_result::requeue;
        }
        // Settle the message even when stop was requested meanwhile (graceful drain). The
        // queue retries refusals itself while the lease holds; an ack/nack that still fails
        // has been given up to recovery (its identity retired), which returns the message
        // once the lease lapses: counted as unsettled, never as done.
        try {
            bool ok = false;
            switch (res) {
                case handler_result::ack:
                    // The ack carries the next pop (one round trip per message) unless the
                    // worker is stopping: then nothing new is taken.
                    if (stop_.load()) {
                        ok = queue_.ack(*d);
                    } else {
                        auto r = queue_.ack_and_pop(*d);
                        ok = r.acked;
                        next = std::move(r.next);
                    }
                    if (ok) acked_.fetch_add(1);
                    break;
                case handler_result::requeue:
                    ok = queue_.nack(*d, nack_action::requeue);
                    if (ok) requeued_.fetch_add(1);
                    break;
                case handler_result::dead_letter:
                    ok = queue_.nack(*d, nack_action::dead_letter);
                    if (ok) dead_.fetch_add(1);
                    break;
            }
            if (!ok) lost_.fetch_add(1);
        } catch (const std::exception&) {
            errors_.record();
            unsettled_.fetch_add(1);
        }
    }
}

}  // namespace redcoord
