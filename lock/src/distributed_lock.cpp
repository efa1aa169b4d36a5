#include <redcoord/lock/distributed_lock.hpp>

#include "lock_access.hpp"
#include "lock_core.hpp"
#include "options_check.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/lock/async.hpp>

#include <redcoord/core/deadline.hpp>

namespace redcoord {

using std::chrono::milliseconds;

namespace {

detail::lock_core_config core_config(const lock_options& o) {
    detail::validate(o);
    auto c = detail::shared_config(o);
    c.kind = "lock";
    c.options_name = "lock_options";
    c.replicas = o.replication.replicas;
    // A refusal without a holder is an attempt given back (too few replicas acknowledged, or
    // validity used up): retry after the replication timeout, or soon.
    c.waiting.retry_delay = o.replication.replicas > 0 ? o.replication.timeout : milliseconds(1);
    return c;
}

}  // namespace

struct distributed_lock::impl : detail::lock_core {
    using lock_core::lock_core;
};

distributed_lock::distributed_lock(connection_pool& pool, std::string resource, lock_options opts) {
    auto c = core_config(opts);
    impl_ = std::make_unique<impl>(
        detail::single_transport(pool, opts.replication.replicas, opts.replication.timeout),
        std::move(resource), std::move(c));
}

distributed_lock::~distributed_lock() = default;

std::optional<lock_acquisition> distributed_lock::acquire(milliseconds wait) {
    return impl_->acquire_until(deadline_after(wait));
}
std::optional<lock_acquisition> distributed_lock::acquire_until(
    std::chrono::steady_clock::time_point deadline) {
    return impl_->acquire_until(deadline);
}
bool distributed_lock::extend(milliseconds ttl) { return impl_->extend(ttl); }
bool distributed_lock::extend() { return impl_->extend(impl_->config().ttl); }
bool distributed_lock::release() { return impl_->release(); }
bool distributed_lock::lost() const { return impl_->lost(); }
bool distributed_lock::held() const { return impl_->is_held(); }
std::optional<lock_acquisition> distributed_lock::current() const { return impl_->current(); }
std::uint64_t distributed_lock::fencing_token() const { return impl_->fencing_token(); }
void distributed_lock::check_held() const { impl_->check_held(); }
// By value in the public API, as every on_*() of redcoord; Boost.Signals2 copies the slot.
// NOLINTNEXTLINE(performance-unnecessary-value-param): by value in the public API (see above)
boost::signals2::scoped_connection distributed_lock::on_lost(lost_slot slot) {
    return impl_->on_lost(slot);
}
void distributed_lock::lock() { impl_->lock(); }
bool distributed_lock::try_lock() {
    return impl_->acquire_until(std::chrono::steady_clock::now()).has_value();
}
void distributed_lock::unlock() noexcept { impl_->unlock(); }
const std::string& distributed_lock::resource() const noexcept { return impl_->resource; }
const std::string& distributed_lock::key() const noexcept { return impl_->key; }

namespace detail {

lock_core& lock_access::core(distributed_lock& l) { return *l.impl_; }

std::shared_ptr<async_operation> start_async_acquire(distributed_lock& lock, milliseconds wait,
                                                     acquire_completion done) {
    if (wait.count() < 0) throw invalid_argument("async_acquire: wait must be >= 0");
    return lock_access::core(lock).async_acquire_until(deadline_after(wait), std::move(done));
}

std::shared_ptr<async_operation> start_async_release(distributed_lock& lock,
                                                     async_completion<bool> done) {
    return lock_access::core(lock).async_release(std::move(done));
}

runtime& runtime_of(distributed_lock& lock) { return *lock_access::core(lock).rt; }

}  // namespace detail

}  // namespace redcoord
