#include <redcoord/core/errors.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>

#include "limit_common.hpp"
#include "limit_scripts.hpp"
#include "options_check.hpp"

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
    std::string name;
    detail::limiter_call call;
};

sliding_window_limiter::sliding_window_limiter(connection_pool& pool, std::string name,
                                               sliding_window_options opts) {
    detail::validate_limit_name(name, "sliding window limiter name");
    detail::validate(opts);
    detail::limiter_call call{
        pool,
        detail::window_log_script(),
        {make_key(opts.prefix, "window", name), make_key(opts.prefix, "window", name, "seq")},
        std::to_string(opts.limit),
        std::to_string(opts.window.count()),
        opts.limit,
        "limit",
        detail::refused_counter(pool, "window", name)};
    impl_ = std::make_unique<impl>(impl{std::move(name), std::move(call)});
}

sliding_window_limiter::~sliding_window_limiter() = default;

limit_result sliding_window_limiter::try_acquire(std::uint64_t cost) {
    return impl_->call.ask(cost);
}

limit_result sliding_window_limiter::acquire(std::uint64_t cost, std::chrono::microseconds wait) {
    return impl_->call.ask_waiting(cost, wait);
}

const std::string& sliding_window_limiter::name() const noexcept { return impl_->name; }

}  // namespace redcoord
