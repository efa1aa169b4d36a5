#include <redcoord/core/duration.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/limit/rate_limiter.hpp>

#include "limit_common.hpp"
#include "limit_scripts.hpp"
#include "options_check.hpp"

#include <cctype>
#include <charconv>
#include <cmath>

namespace redcoord {

rate_spec parse_rate(std::string_view text) {
    const auto bad = [&](const std::string& why) {
        return invalid_argument("rate '" + std::string(text) + "': " + why +
                                " (expected <count>/<period>, e.g. 100/s, 5/m, 20/500ms)");
    };
    const auto slash = text.find('/');
    if (slash == std::string_view::npos) throw bad("no '/'");
    const auto count = text.substr(0, slash);
    auto period = std::string(text.substr(slash + 1));
    rate_spec r;
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), r.rate);
    if (count.empty() || ec != std::errc() || end != count.data() + count.size())
        throw bad("the count is not a number");
    if (!(r.rate > 0) || !std::isfinite(r.rate)) throw bad("the count must be > 0");
    if (period.empty()) throw bad("no period");
    if (std::isalpha(static_cast<unsigned char>(period.front())) != 0) period.insert(0, "1");
    try {
        r.period = parse_duration(period);
    } catch (const invalid_argument& e) {
        throw bad(e.what());
    }
    if (r.period <= std::chrono::microseconds::zero()) throw bad("the period must be > 0");
    return r;
}

namespace detail {

void validate(const rate_limiter_options& o) {
    if (!(o.rate > 0) || !std::isfinite(o.rate))
        throw invalid_argument("rate_limiter_options::rate must be > 0 and finite");
    if (o.period <= std::chrono::microseconds::zero())
        throw invalid_argument("rate_limiter_options::period must be > 0");
    if (o.burst < 1) throw invalid_argument("rate_limiter_options::burst must be >= 1");
    const double interval = static_cast<double>(o.period.count()) / o.rate;
    if (interval < 1e-3)
        throw invalid_argument("rate_limiter_options: period / rate must be at least 1 ns");
    if (static_cast<double>(o.burst) * interval > 1e14)
        throw invalid_argument(
            "rate_limiter_options: burst * period / rate must be at most 10^14 us");
}

}  // namespace detail

struct rate_limiter::impl {
    std::string name;
    detail::limiter_call call;
};

rate_limiter::rate_limiter(connection_pool& pool, std::string name, rate_limiter_options opts) {
    detail::validate_limit_name(name, "rate limiter name");
    detail::validate(opts);
    const double interval = static_cast<double>(opts.period.count()) / opts.rate;
    detail::limiter_call call{pool,
                              detail::gcra_script(),
                              {make_key(opts.prefix, "rate", name)},
                              detail::number_text(interval),
                              std::to_string(opts.burst),
                              opts.burst,
                              "burst",
                              detail::refused_counter(pool, "rate", name)};
    impl_ = std::make_unique<impl>(impl{std::move(name), std::move(call)});
}

rate_limiter::~rate_limiter() = default;

limit_result rate_limiter::try_acquire(std::uint64_t cost) { return impl_->call.ask(cost); }

limit_result rate_limiter::acquire(std::uint64_t cost, std::chrono::microseconds wait) {
    return impl_->call.ask_waiting(cost, wait);
}

const std::string& rate_limiter::name() const noexcept { return impl_->name; }

}  // namespace redcoord
