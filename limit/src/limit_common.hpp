#pragma once
// What the limiters share: name and cost checks, running a limiter script, and the waiting
// loop of acquire().

#include <redcoord/core/detail/observe.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/limit/limit_result.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord::detail {

// validate_name, and no '}' anywhere: the name is a key's Cluster hash tag, which ends at the
// first '}', so "a}b" and "a}c" would share a slot and read as one tag in the key.
// @throws invalid_argument.
void validate_limit_name(std::string_view name, std::string_view what);

// 1 <= cost <= most; `most_what` names the bound ("burst", "limit").
// @throws invalid_argument.
void validate_cost(std::uint64_t cost, std::uint64_t most, std::string_view most_what);

// redcoord_rate_limited_total{kind, name} of a limiter on `pool`'s runtime (empty when off).
[[nodiscard]] counter_handle refused_counter(const connection_pool& pool, std::string_view kind,
                                             std::string_view name);

// Shortest round-trip decimal text of `v` (what the scripts read back with tonumber).
[[nodiscard]] std::string number_text(double v);

// Runs a limiter script and reads its {allowed, remaining, retry_after us, reset_after us}.
// @throws as script::run, and protocol_error for a reply of another shape.
[[nodiscard]] limit_result run_limit_script(connection_pool& pool, const script& s,
                                            std::span<const std::string_view> keys,
                                            std::span<const std::string> args);

// One limiter's request, the same for every kind: its script, keys, the two option arguments
// that precede the cost, the largest cost and the refusal counter.
struct limiter_call {
    connection_pool& pool;
    const script& lua;
    std::vector<std::string> keys;
    std::string arg1, arg2;  // ARGV[1], ARGV[2]; the cost is ARGV[3]
    std::uint64_t most_cost;
    std::string most_what;  // what bounds the cost ("burst", "limit")
    counter_handle refused;

    // try_acquire(): checks the cost, runs the script, counts a refusal.
    [[nodiscard]] limit_result ask(std::uint64_t cost) const;
    // acquire(): as ask(), waiting as acquire_waiting().
    [[nodiscard]] limit_result ask_waiting(std::uint64_t cost,
                                           std::chrono::microseconds wait) const;
};

// acquire(): asks, and while refused sleeps exactly the retry_after it was told and asks
// again, until admitted or until retry_after exceeds what is left of `wait` (then returns the
// refusal without sleeping).
[[nodiscard]] limit_result acquire_waiting(const std::function<limit_result()>& attempt,
                                           std::chrono::microseconds wait);

}  // namespace redcoord::detail
