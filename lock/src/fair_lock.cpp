// fair_lock: the public class over fair_core (fair_core.hpp); its options are checked in
// options.cpp.
#include <redcoord/lock/fair_lock.hpp>

#include "fair_core.hpp"
#include "lock_access.hpp"

#include <redcoord/core/errors.hpp>

#include <stop_token>
#include <string_view>

namespace redcoord {

using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

struct fair_lock::impl : detail::fair_core {
    using fair_core::fair_core;
};

namespace detail {
fair_core& lock_access::core(fair_lock& l) { return *l.impl_; }
}  // namespace detail

fair_lock::fair_lock(connection_pool& pool, std::string resource, fair_lock_options opts)
    : impl_(std::make_unique<impl>(pool, std::move(resource), std::move(opts))) {}

fair_lock::~fair_lock() = default;

std::optional<lock_acquisition> fair_lock::acquire(milliseconds wait) {
    return impl_->acquire_until(deadline_after(wait), false);
}
std::optional<lock_acquisition> fair_lock::acquire_until(clock_type::time_point deadline) {
    return impl_->acquire_until(deadline, false);
}
std::optional<lock_acquisition> fair_lock::acquire(milliseconds wait, std::stop_token stop) {
    return impl_->acquire_until(deadline_after(wait), false, std::move(stop));
}
std::optional<lock_acquisition> fair_lock::acquire_until(clock_type::time_point deadline,
                                                         std::stop_token stop) {
    return impl_->acquire_until(deadline, false, std::move(stop));
}
bool fair_lock::extend(milliseconds ttl) { return impl_->extend(ttl); }
bool fair_lock::extend() { return impl_->extend(impl_->options().timing.ttl); }
bool fair_lock::release() { return impl_->release(); }
bool fair_lock::lost() const { return impl_->lost(); }
bool fair_lock::held() const { return impl_->is_held(); }
std::optional<lock_acquisition> fair_lock::current() const { return impl_->current(); }
std::uint64_t fair_lock::fencing_token() const { return impl_->fencing_token(); }
void fair_lock::check_held() const { impl_->check_held(); }
// By value in the public API, as every on_*() of redcoord; Boost.Signals2 copies the slot.
// NOLINTNEXTLINE(performance-unnecessary-value-param): by value in the public API (see above)
boost::signals2::scoped_connection fair_lock::on_lost(lost_slot slot) {
    return impl_->on_lost(slot);
}
void fair_lock::lock() {
    while (!impl_->acquire_until(forever(), true)) {
        // Unlimited: only an error ends the wait without the lock, and that throws.
    }
}
bool fair_lock::try_lock() { return impl_->acquire_until(clock_type::now(), false).has_value(); }
void fair_lock::unlock() noexcept { impl_->unlock(); }
const std::string& fair_lock::resource() const noexcept { return impl_->resource; }
const std::string& fair_lock::key() const noexcept { return impl_->key; }
const std::string& fair_lock::waiter_id() const noexcept { return impl_->id(); }

}  // namespace redcoord
