#include <redcoord/core/detail/sha1.hpp>
#include <redcoord/core/detail/snapshot.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/limit/inspect.hpp>

#include "limit_common.hpp"
#include "options_check.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace redcoord {

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

std::string fingerprint(std::string_view token) { return detail::sha1_hex(token).substr(0, 16); }

// A ZRANGE ... WITHSCORES reply as (member, score) pairs.
std::vector<std::pair<std::string, double>> scored(const reply& r, std::string_view what) {
    if (!r.is_array() || r.elements().size() % 2 != 0)
        throw protocol_error("inspect: " + std::string(what) + " is not a scored list");
    std::vector<std::pair<std::string, double>> out;
    const auto& e = r.elements();
    for (std::size_t i = 0; i < e.size(); i += 2)
        out.emplace_back(e[i].text(), std::stod(e[i + 1].text()));
    return out;
}

milliseconds left_of(double end_us, std::int64_t now_us) {
    return milliseconds(
        static_cast<std::int64_t>(std::ceil((end_us - static_cast<double>(now_us)) / 1000.0)));
}

std::size_t live(const std::vector<std::pair<std::string, double>>& entries, std::int64_t now_us) {
    return static_cast<std::size_t>(
        std::count_if(entries.begin(), entries.end(),
                      [&](const auto& e) { return e.second > static_cast<double>(now_us); }));
}

// Live leases as views (one per member, or per `holder_of(member)`), soonest-ending first.
template <class HolderOf>
std::vector<lease_view> leases(const std::vector<std::pair<std::string, double>>& entries,
                               std::int64_t now_us, HolderOf holder_of) {
    std::map<std::string, lease_view> by_holder;
    for (const auto& [member, end] : entries) {
        if (end <= static_cast<double>(now_us)) continue;
        const auto token = holder_of(member);
        const auto left = left_of(end, now_us);
        auto it = by_holder
                      .try_emplace(token, lease_view{fingerprint(token),
                                                     std::string(holder_label_of(token)), 0, left})
                      .first;
        it->second.count += 1;
        it->second.ttl_left = std::min(it->second.ttl_left, left);
    }
    std::vector<lease_view> out;
    out.reserve(by_holder.size());
    for (auto& [token, v] : by_holder) out.push_back(std::move(v));
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.ttl_left < b.ttl_left; });
    return out;
}

std::int64_t now_of(const reply& time) {
    return static_cast<std::int64_t>(detail::server_time(time).count());
}

}  // namespace

semaphore_inspection inspect_semaphore(connection_pool& pool, std::string_view name,
                                       std::string_view prefix) {
    detail::validate_limit_name(name, "semaphore name");
    const auto key = make_key(prefix, "semaphore", name);
    const auto r = detail::read_snapshot(
        pool, {{"TIME"},
               {"ZRANGE", key, "0", "-1", "WITHSCORES"},
               {"GET", make_key(prefix, "semaphore", name, "fence")},
               {"ZRANGE", make_key(prefix, "semaphore", name, "waiting"), "0", "-1", "WITHSCORES"},
               {"GET", make_key(prefix, "semaphore", name, "permits")}});
    const auto now = now_of(r[0]);
    semaphore_inspection out;
    // A permit's member is "<token>:<i>": one holding per token.
    out.holders = leases(scored(r[1], "the holders"), now,
                         [](const std::string& m) { return m.substr(0, m.rfind(':')); });
    for (const auto& h : out.holders) out.held += h.count;
    out.fencing_counter = detail::counter_of(r[2], "the fencing counter");
    out.waiters = live(scored(r[3], "the waiters"), now);
    out.permits = detail::counter_of(r[4], "the semaphore's N");
    return out;
}

rw_lock_inspection inspect_rw_lock(connection_pool& pool, std::string_view name,
                                   std::string_view prefix) {
    detail::validate_limit_name(name, "rw_lock name");
    const auto key = make_key(prefix, "rwlock", name);
    const auto writer_key = make_key(prefix, "rwlock", name, "writer");
    const auto r = detail::read_snapshot(
        pool, {{"TIME"},
               {"ZRANGE", key, "0", "-1", "WITHSCORES"},
               {"GET", writer_key},
               {"PTTL", writer_key},
               {"GET", make_key(prefix, "rwlock", name, "fence")},
               {"ZRANGE", make_key(prefix, "rwlock", name, "writers"), "0", "-1", "WITHSCORES"},
               {"ZRANGE", make_key(prefix, "rwlock", name, "waiting"), "0", "-1", "WITHSCORES"}});
    const auto now = now_of(r[0]);
    rw_lock_inspection out;
    out.readers = leases(scored(r[1], "the readers"), now, [](const std::string& m) { return m; });
    if (auto w = r[2].maybe_text())
        out.writer = lease_view{fingerprint(*w), std::string(holder_label_of(*w)), 1,
                                detail::ttl_of(r[3]).value_or(milliseconds(0))};
    out.fencing_counter = detail::counter_of(r[4], "the fencing counter");
    out.waiting_writers = live(scored(r[5], "the writers' intents"), now);
    out.waiting_readers = live(scored(r[6], "the waiting readers"), now);
    return out;
}

namespace {

// The fields of a stored value "<a>:<b>:..." (the rate limiter's TAT, the window's spec).
std::vector<std::string> fields(const std::string& v) {
    std::vector<std::string> out;
    std::size_t from = 0;
    for (std::size_t colon; (colon = v.find(':', from)) != std::string::npos; from = colon + 1)
        out.push_back(v.substr(from, colon - from));
    out.push_back(v.substr(from));
    return out;
}

// Judges a rate limiter's stored TAT at `now` with the interval and burst given, or else
// stored with it by gcra.lua ("<whole us>:<fraction>:<interval>:<burst>").
rate_limiter_inspection judge_rate(const reply& stored, std::int64_t now,
                                   std::optional<double> interval,
                                   std::optional<std::uint64_t> burst) {
    rate_limiter_inspection out;
    const auto v = stored.maybe_text();
    if (!v) {
        out.interval_us = interval;
        out.burst = burst;
        out.remaining = burst.value_or(0);
        return out;
    }
    const auto f = fields(*v);
    if (f.size() < 2) throw protocol_error("inspect: a rate limiter state without ':'");
    if (!interval && f.size() >= 4) {
        interval = std::stod(f[2]);
        burst = std::stoull(f[3]);
    }
    // The TAT's lead over now is the time until the limiter is full again.
    const double lead =
        std::max(0.0, static_cast<double>(std::stoll(f[0]) - now) + std::stod(f[1]));
    out.idle = lead <= 0;
    out.full_after = microseconds(static_cast<std::int64_t>(std::ceil(lead)));
    out.interval_us = interval;
    out.burst = burst;
    if (interval && burst) {
        const double b = static_cast<double>(*burst);
        out.remaining = static_cast<std::uint64_t>(
            std::clamp(std::floor((b * *interval - lead) / *interval), 0.0, b));
    }
    return out;
}

// Judges a window's log (ZRANGE WITHSCORES) at `now` with the limit and window given, or else
// stored beside it by window_log.lua ("<limit>:<window us>").
sliding_window_inspection judge_window(const reply& log, const reply& spec, std::int64_t now,
                                       std::optional<std::uint64_t> limit,
                                       std::optional<microseconds> window) {
    sliding_window_inspection out;
    if (!limit) {
        if (const auto v = spec.maybe_text()) {
            const auto f = fields(*v);
            if (f.size() != 2) throw protocol_error("inspect: a window spec is not limit:window");
            limit = std::stoull(f[0]);
            window = microseconds(std::stoll(f[1]));
        }
    }
    out.limit = limit;
    out.window = window;
    double newest = 0;
    for (const auto& [member, at] : scored(log, "the window's log")) {
        // A unit admitted at `at` counts while now < at + window; without a known window,
        // every unit still logged (the log lapses a window after its last admission).
        if (window && at + static_cast<double>(window->count()) <= static_cast<double>(now))
            continue;
        ++out.used;
        newest = std::max(newest, at);
    }
    out.idle = out.used == 0;
    if (!out.idle && window)
        out.reset_after = microseconds(static_cast<std::int64_t>(std::ceil(std::max(
            0.0, newest + static_cast<double>(window->count()) - static_cast<double>(now)))));
    if (limit) out.remaining = *limit > out.used ? *limit - out.used : 0;
    return out;
}

}  // namespace

rate_limiter_inspection inspect_rate_limiter(connection_pool& pool, std::string_view name,
                                             const rate_limiter_options& opts) {
    detail::validate_limit_name(name, "rate limiter name");
    detail::validate(opts);
    const auto r =
        detail::read_snapshot(pool, {{"TIME"}, {"GET", make_key(opts.prefix, "rate", name)}});
    return judge_rate(r[1], now_of(r[0]), static_cast<double>(opts.period.count()) / opts.rate,
                      opts.burst);
}

rate_limiter_inspection inspect_rate_limiter(connection_pool& pool, std::string_view name,
                                             std::string_view prefix) {
    detail::validate_limit_name(name, "rate limiter name");
    const auto r = detail::read_snapshot(pool, {{"TIME"}, {"GET", make_key(prefix, "rate", name)}});
    return judge_rate(r[1], now_of(r[0]), std::nullopt, std::nullopt);
}

namespace {

// The window's TIME, log and stored spec in one snapshot.
std::vector<reply> read_window(connection_pool& pool, std::string_view name,
                               std::string_view prefix) {
    detail::validate_limit_name(name, "sliding window limiter name");
    return detail::read_snapshot(
        pool, {{"TIME"},
               {"ZRANGE", make_key(prefix, "window", name), "0", "-1", "WITHSCORES"},
               {"GET", make_key(prefix, "window", name, "spec")}});
}

}  // namespace

sliding_window_inspection inspect_sliding_window(connection_pool& pool, std::string_view name,
                                                 const sliding_window_options& opts) {
    detail::validate(opts);
    const auto r = read_window(pool, name, opts.prefix);
    return judge_window(r[1], r[2], now_of(r[0]), opts.limit, opts.window);
}

sliding_window_inspection inspect_sliding_window(connection_pool& pool, std::string_view name,
                                                 std::string_view prefix) {
    const auto r = read_window(pool, name, prefix);
    return judge_window(r[1], r[2], now_of(r[0]), std::nullopt, std::nullopt);
}

}  // namespace redcoord
