#include <redcoord/core/errors.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>

#include "limit_common.hpp"
#include "limit_scripts.hpp"

namespace redcoord {

namespace detail {

void validate(const sliding_window_options& o) {
    if (o.limit < 1 || o.limit > 1000000)
        throw invalid_argument("sliding_window_options::limit must be in [1, 1000000]");
    if (o.window <= std::chrono::microseconds::zero())
        throw invalid_argument("sliding_window_options::window must be > 0");
    if (o.window.count() > (std::int64_t{1} << 40))
        throw invalid_argument("sliding_window_options::window must be at most 2^40 us");
}

}  // namespace detail

struct sliding_window_limiter::impl {
    connection_pool& pool;
    std::string name;
    sliding_window_options opts;
    detail::counter_handle refused;
    std::string key;
    std::string seq_key;
    std::string limit;
    std::string window;
};

sliding_window_limiter::sliding_window_limiter(connection_pool& pool, std::string name,
                                               sliding_window_options opts) {
    detail::validate_limit_name(name, "sliding window limiter name");
    detail::validate(opts);
    auto key = make_key(opts.prefix, "window", name);
    auto seq = make_key(opts.prefix, "window", name, "seq");
    auto limit = std::to_string(opts.limit);
    auto window = std::to_string(opts.window.count());
    auto refused = detail::refused_counter(pool, "window", name);
    impl_ = std::unique_ptr<impl>(new impl{pool, std::move(name), std::move(opts),
                                           std::move(refused), std::move(key), std::move(seq),
                                           std::move(limit), std::move(window)});
}

sliding_window_limiter::~sliding_window_limiter() = default;

limit_result sliding_window_limiter::try_acquire(std::uint64_t cost) {
    detail::validate_cost(cost, impl_->opts.limit, "limit");
    const std::string_view keys[] = {impl_->key, impl_->seq_key};
    const std::string args[] = {impl_->limit, impl_->window, std::to_string(cost)};
    auto r = detail::run_limit_script(impl_->pool, detail::window_log_script(), keys, args);
    if (!r.allowed) impl_->refused.inc();
    return r;
}

limit_result sliding_window_limiter::acquire(std::uint64_t cost, std::chrono::microseconds wait) {
    detail::validate_cost(cost, impl_->opts.limit, "limit");
    return detail::acquire_waiting([&] { return try_acquire(cost); }, wait);
}

const std::string& sliding_window_limiter::name() const noexcept { return impl_->name; }

}  // namespace redcoord
