#include "limit_common.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/runtime.hpp>

#include <charconv>
#include <thread>

namespace redcoord::detail {

void validate_limit_name(std::string_view name, std::string_view what) {
    validate_name(name, what);
    if (name.find('}') != std::string_view::npos)
        throw invalid_argument(std::string(what) + " must not contain '}'");
}

void validate_cost(std::uint64_t cost, std::uint64_t most, std::string_view most_what) {
    if (cost == 0) throw invalid_argument("cost must be >= 1");
    if (cost > most)
        throw invalid_argument("cost " + std::to_string(cost) + " exceeds the " +
                               std::string(most_what) + " (" + std::to_string(most) +
                               "): it could never be admitted");
}

counter_handle refused_counter(const connection_pool& pool, std::string_view kind,
                               std::string_view name) {
    const metrics_scope ms(*pool.runtime());
    if (!ms) return {};
    return ms.counter(metric::rate_limited_total,
                      {{"kind", std::string(kind)}, {"name", ms.name(name)}});
}

std::string number_text(double v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

limit_result run_limit_script(connection_pool& pool, const script& s,
                              std::span<const std::string_view> keys,
                              std::span<const std::string> args) {
    reply r;
    try {
        r = s.run(pool, keys, args);
    } catch (...) {
        rethrow_with_script(s);
    }
    if (!r.is_array() || r.elements().size() != 4)
        throw protocol_error("limiter script: unexpected reply shape");
    const auto& e = r.elements();
    limit_result out;
    out.allowed = e[0].integer() == 1;
    out.remaining = static_cast<std::uint64_t>(std::max<std::int64_t>(0, e[1].integer()));
    out.retry_after = std::chrono::microseconds(std::max<std::int64_t>(0, e[2].integer()));
    out.reset_after = std::chrono::microseconds(std::max<std::int64_t>(0, e[3].integer()));
    return out;
}

limit_result acquire_waiting(const std::function<limit_result()>& attempt,
                             std::chrono::microseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
        auto r = attempt();
        if (r.allowed) return r;
        const auto left = deadline - std::chrono::steady_clock::now();
        if (r.retry_after > left) return r;
        std::this_thread::sleep_for(r.retry_after);
    }
}

limit_result limiter_call::ask(std::uint64_t cost) const {
    validate_cost(cost, most_cost, most_what);
    std::vector<std::string_view> k(keys.begin(), keys.end());
    const std::string args[] = {arg1, arg2, std::to_string(cost)};
    auto r = run_limit_script(pool, lua, k, args);
    if (!r.allowed) refused.inc();
    return r;
}

limit_result limiter_call::ask_waiting(std::uint64_t cost, std::chrono::microseconds wait) const {
    validate_cost(cost, most_cost, most_what);
    return acquire_waiting([&] { return ask(cost); }, wait);
}

}  // namespace redcoord::detail
