#include "queue_keys.hpp"

#include <redcoord/core/detail/snapshot.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/queue/envelope.hpp>
#include <redcoord/queue/inspect.hpp>

#include <algorithm>

namespace redcoord {

namespace detail {
queue_keys make_queue_keys(std::string_view prefix, std::string_view name) {
    return {make_key(prefix, "queue", name), make_key(prefix, "queue", name, "dead"),
            make_key(prefix, "queue", name, "consumers"),
            make_key(prefix, "queue", name, "processing:"),
            make_key(prefix, "queue", name, "heartbeat:")};
}
}  // namespace detail

namespace {

using std::chrono::milliseconds;

std::size_t length_of(const reply& r) {
    if (!r.is_integer() || r.integer() < 0)
        throw protocol_error("inspect_queue: LLEN did not return a length");
    return static_cast<std::size_t>(r.integer());
}

// Elements move right-to-left (LPUSH in, LMOVE RIGHT out), so a list's oldest is at index -1.
std::optional<milliseconds> age_of(const reply& oldest, std::chrono::microseconds server_now) {
    const auto wire = oldest.maybe_text();
    if (!wire) return std::nullopt;
    const auto env = decode_envelope(*wire);
    if (!env) return std::nullopt;
    const auto pushed =
        std::chrono::duration_cast<std::chrono::microseconds>(env->enqueued_at.time_since_epoch());
    return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(server_now - pushed));
}

}  // namespace

std::size_t queue_inspection::in_flight() const noexcept {
    std::size_t n = 0;
    for (const auto& c : consumers) n += c.in_flight;
    return n;
}

std::size_t queue_inspection::expired() const noexcept {
    return static_cast<std::size_t>(std::count_if(consumers.begin(), consumers.end(),
                                                  [](const auto& c) { return !c.lease_left; }));
}

queue_inspection inspect_queue(connection_pool& pool, std::string_view name,
                               std::string_view prefix) {
    validate_name(name, "queue name");
    const auto k = detail::make_queue_keys(prefix, name);
    const auto first = detail::read_snapshot(pool, {{"LLEN", k.ready},
                                                    {"LLEN", k.dead},
                                                    {"LINDEX", k.ready, "-1"},
                                                    {"SMEMBERS", k.consumers},
                                                    {"TIME"}});
    queue_inspection out;
    out.ready = length_of(first[0]);
    out.dead = length_of(first[1]);
    const auto now = detail::server_time(first[4]);
    out.oldest_ready_age = age_of(first[2], now);
    if (!first[3].is_array()) throw protocol_error("inspect_queue: SMEMBERS did not return a set");
    std::vector<std::string> ids;
    for (const auto& e : first[3].elements()) ids.push_back(e.text());
    if (ids.empty()) return out;
    std::sort(ids.begin(), ids.end());

    std::vector<std::vector<std::string>> reads;
    for (const auto& id : ids) {
        reads.push_back({"LLEN", k.processing_prefix + id});
        reads.push_back({"PTTL", k.heartbeat_prefix + id});
        reads.push_back({"LINDEX", k.processing_prefix + id, "-1"});
    }
    reads.push_back({"TIME"});
    const auto second = detail::read_snapshot(pool, std::move(reads));
    const auto later = detail::server_time(second.back());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        queue_consumer_inspection c;
        c.id = ids[i];
        c.in_flight = length_of(second[3 * i]);
        c.lease_left = detail::ttl_of(second[3 * i + 1]);
        c.oldest_in_flight_age = age_of(second[3 * i + 2], later);
        out.consumers.push_back(std::move(c));
    }
    return out;
}

}  // namespace redcoord
