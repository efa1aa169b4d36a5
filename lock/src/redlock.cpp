#include <redcoord/lock/redlock.hpp>

#include "lock_access.hpp"
#include "lock_core.hpp"
#include "options_check.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>

#include <redcoord/core/deadline.hpp>

#include <set>

namespace redcoord {

using std::chrono::milliseconds;

namespace {

detail::lock_core_config core_config(const redlock_options& o,
                                     const std::vector<connection_pool*>& nodes) {
    detail::validate(o, nodes.size());
    std::set<connection_pool*> seen;
    for (auto* p : nodes) {
        if (!p) throw invalid_argument("redlock given a null node");
        if (!seen.insert(p).second) throw invalid_argument("redlock given the same node twice");
    }
    auto c = detail::shared_config(o);
    c.kind = "redlock";
    c.options_name = "redlock_options";
    c.round_timeout = o.node_timeout;
    c.waiting.retry_delay = o.retry_delay;
    c.waiting.jitter_first_retry = true;
    c.waiting.retry_count = o.retry_count;
    c.on_wait = o.on_wait;
    c.keep_outcomes = true;
    return c;
}

}  // namespace

struct redlock::impl : detail::lock_core {
    using lock_core::lock_core;
};

redlock::redlock(std::vector<connection_pool*> nodes, std::string resource, redlock_options opts) {
    auto c = core_config(opts, nodes);
    impl_ = std::make_unique<impl>(detail::fan_out_transport(std::move(nodes), opts.node_timeout),
                                   std::move(resource), std::move(c));
}

redlock::~redlock() = default;

std::optional<lock_acquisition> redlock::acquire(milliseconds wait) {
    return impl_->acquire_until(deadline_after(wait));
}
std::optional<lock_acquisition> redlock::acquire_until(
    std::chrono::steady_clock::time_point deadline) {
    return impl_->acquire_until(deadline);
}
bool redlock::extend(milliseconds ttl) { return impl_->extend(ttl); }
bool redlock::extend() { return impl_->extend(impl_->config().ttl); }
bool redlock::release() { return impl_->release(); }
bool redlock::lost() const { return impl_->lost(); }
bool redlock::held() const { return impl_->is_held(); }
std::optional<lock_acquisition> redlock::current() const { return impl_->current(); }
std::uint64_t redlock::fencing_token() const { return impl_->fencing_token(); }
void redlock::check_held() const { impl_->check_held(); }
std::vector<node_outcome> redlock::last_outcomes() const { return impl_->last_outcomes(); }
// By value in the public API, as every on_*() of redcoord; Boost.Signals2 copies the slot.
// NOLINTNEXTLINE(performance-unnecessary-value-param): by value in the public API (see above)
boost::signals2::scoped_connection redlock::on_lost(lost_slot slot) { return impl_->on_lost(slot); }
void redlock::lock() { impl_->lock(); }
bool redlock::try_lock() {
    return impl_->acquire_until(std::chrono::steady_clock::now()).has_value();
}
void redlock::unlock() noexcept { impl_->unlock(); }
const std::string& redlock::resource() const noexcept { return impl_->resource; }
const std::string& redlock::key() const noexcept { return impl_->key; }
std::size_t redlock::size() const noexcept { return impl_->size(); }

namespace detail {

lock_core& lock_access::core(redlock& l) { return *l.impl_; }

std::shared_ptr<async_operation> start_async_acquire(redlock& lock, milliseconds wait,
                                                     acquire_completion done) {
    if (wait.count() < 0) throw invalid_argument("async_acquire: wait must be >= 0");
    return lock_access::core(lock).async_acquire_until(deadline_after(wait), std::move(done));
}

std::shared_ptr<async_operation> start_async_release(redlock& lock, async_completion<bool> done) {
    return lock_access::core(lock).async_release(std::move(done));
}

runtime& runtime_of(redlock& lock) { return *lock_access::core(lock).rt; }

}  // namespace detail

}  // namespace redcoord
