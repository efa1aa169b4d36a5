#include <redcoord/core/detail/sha1.hpp>
#include <redcoord/core/detail/snapshot.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/limit/inspect.hpp>

#include "limit_common.hpp"

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
        pool,
        {{"TIME"},
         {"ZRANGE", key, "0", "-1", "WITHSCORES"},
         {"GET", make_key(prefix, "semaphore", name, "fence")},
         {"ZRANGE", make_key(prefix, "semaphore", name, "waiting"), "0", "-1", "WITHSCORES"}});
    const auto now = now_of(r[0]);
    semaphore_inspection out;
    // A permit's member is "<token>:<i>": one holding per token.
    out.holders = leases(scored(r[1], "the holders"), now,
                         [](const std::string& m) { return m.substr(0, m.rfind(':')); });
    for (const auto& h : out.holders) out.held += h.count;
    out.fencing_counter = detail::counter_of(r[2], "the fencing counter");
    out.waiters = live(scored(r[3], "the waiters"), now);
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

rate_limiter_inspection inspect_rate_limiter(connection_pool& pool, std::string_view name,
                                             const rate_limiter_options& opts) {
    detail::validate_limit_name(name, "rate limiter name");
    detail::validate(opts);
    const auto r =
        detail::read_snapshot(pool, {{"TIME"}, {"GET", make_key(opts.prefix, "rate", name)}});
    const auto now = now_of(r[0]);
    const double interval = static_cast<double>(opts.period.count()) / opts.rate;
    const double burst = static_cast<double>(opts.burst);
    rate_limiter_inspection out;
    out.remaining = opts.burst;
    const auto v = r[1].maybe_text();
    if (!v) return out;
    // The TAT as gcra.lua writes it: "<whole us>:<fraction>"; its lead over now is the time
    // until the limiter is full again.
    const auto colon = v->find(':');
    if (colon == std::string::npos)
        throw protocol_error("inspect: a rate limiter state without ':'");
    const double lead = std::max(0.0, static_cast<double>(std::stoll(v->substr(0, colon)) - now) +
                                          std::stod(v->substr(colon + 1)));
    out.idle = lead <= 0;
    out.full_after = microseconds(static_cast<std::int64_t>(std::ceil(lead)));
    out.remaining = static_cast<std::uint64_t>(
        std::clamp(std::floor((burst * interval - lead) / interval), 0.0, burst));
    return out;
}

}  // namespace redcoord
