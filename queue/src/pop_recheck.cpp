#include "pop_recheck.hpp"

#include <redcoord/core/deadline.hpp>

#include <boost/asio/post.hpp>

#include <vector>

namespace redcoord::detail {

namespace asio = boost::asio;

pop_recheck::pop_recheck(asio::io_context& io, std::string ready_key,
                         std::chrono::milliseconds period,
                         std::chrono::milliseconds command_timeout)
    : strand_(asio::make_strand(io)), timer_(strand_), ready_key_(std::move(ready_key)),
      period_(period), command_timeout_(command_timeout) {}

std::uint64_t pop_recheck::join(std::function<void()> wake,
                                const std::shared_ptr<async_link>& link) {
    bool start = false;
    std::uint64_t id = 0;
    {
        lock_guard l(mu_);
        id = ++next_id_;
        waiting_.emplace(id, std::move(wake));
        start = !std::exchange(running_, true);
        if (start) link_ = link;
    }
    if (start) asio::post(strand_, [self = shared_from_this()] { self->schedule(); });
    return id;
}

void pop_recheck::leave(std::uint64_t id) noexcept {
    bool last = false;
    {
        lock_guard l(mu_);
        last = waiting_.erase(id) == 1 && waiting_.empty();
    }
    if (!last) return;
    // Ends the wait of a scheduled check early: it finds no pop and ends the chain, so the
    // chain holds neither this object nor the link for a whole period after the last pop.
    try {
        asio::post(strand_, [self = shared_from_this()] { self->timer_.cancel(); });
    } catch (...) {
        // Out of memory: the check still ends the chain when its period is up.
    }
}

std::uint64_t pop_recheck::checks() const {
    lock_guard l(mu_);
    return checks_;
}

void pop_recheck::stop_chain() {
    running_ = false;
    link_.reset();
}

void pop_recheck::schedule() {
    {
        lock_guard l(mu_);
        if (waiting_.empty()) return stop_chain();
    }
    timer_.expires_after(period_);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code) { self->check(); });
}

void pop_recheck::check() {
    std::shared_ptr<async_link> link;
    {
        lock_guard l(mu_);
        if (waiting_.empty()) return stop_chain();
        ++checks_;
        link = link_;
    }
    const auto deadline = command_timeout_.count() > 0
                              ? deadline_after(command_timeout_)
                              : std::chrono::steady_clock::time_point::max();
    link->exec({"LLEN", ready_key_}, deadline,
               [self = shared_from_this()](const link_outcome& o) { self->checked(o); });
}

void pop_recheck::checked(const link_outcome& o) {
    // A failed check wakes the pops too: each attempt then reports what failed, as it would
    // have without this object.
    const bool found =
        !o.result.answered() || !o.result.value->is_integer() || o.result.value->integer() > 0;
    std::vector<std::function<void()>> wakes;
    {
        lock_guard l(mu_);
        if (waiting_.empty()) return stop_chain();
        if (found)
            for (const auto& [id, wake] : waiting_) wakes.push_back(wake);
    }
    for (const auto& wake : wakes) {
        try {
            wake();
        } catch (...) {
            // A wake that throws costs only its own pop this check (its deadline still holds).
        }
    }
    asio::post(strand_, [self = shared_from_this()] { self->schedule(); });
}

}  // namespace redcoord::detail
