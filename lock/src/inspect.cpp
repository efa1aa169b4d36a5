#include "lock_keys.hpp"

#include <redcoord/core/detail/sha1.hpp>
#include <redcoord/core/detail/snapshot.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/lock/inspect.hpp>

namespace redcoord {

namespace detail {
lock_keys make_lock_keys(std::string_view prefix, std::string_view resource) {
    lock_keys k;
    k.key = make_key(prefix, "lock", resource);
    k.fence_key = make_key(prefix, "lock", resource, "fence");
    k.turn_key = make_key(prefix, "lock", resource, "turn");
    k.waiting_key = make_key(prefix, "lock", resource, "waiting");
    k.fair_queue_key = k.key + ":queue";  // fair_lock's scripts derive it from KEYS[1] alike
    k.notice_key = k.key + ":notice";     // the lock scripts derive it from KEYS[1] alike
    return k;
}
}  // namespace detail

std::string lock_holder_fingerprint(std::string_view token) {
    return detail::sha1_hex(token).substr(0, 16);
}

lock_inspection inspect_lock(connection_pool& pool, std::string_view resource,
                             std::string_view prefix) {
    validate_name(resource, "lock resource");
    const auto k = detail::make_lock_keys(prefix, resource);
    const auto r = detail::read_snapshot(pool, {{"GET", k.key},
                                                {"PTTL", k.key},
                                                {"GET", k.fence_key},
                                                {"GET", k.turn_key},
                                                {"PTTL", k.turn_key},
                                                {"GET", k.waiting_key},
                                                {"LRANGE", k.fair_queue_key, "0", "-1"},
                                                {"GET", k.notice_key}});
    lock_inspection out;
    if (auto v = r[0].maybe_text()) {
        out.held = true;
        out.release_notice = r[7].maybe_text() == *v;
        out.holder = lock_holder_fingerprint(*v);
        out.label = std::string(holder_label_of(*v));
        out.ttl_left = detail::ttl_of(r[1]);
    }
    out.fencing_counter = detail::counter_of(r[2], "the fencing counter " + k.fence_key);
    out.turn_owner = r[3].maybe_text();
    if (out.turn_owner) out.turn_left = detail::ttl_of(r[4]);
    out.next_in_turn = r[5].maybe_text();
    if (!r[6].is_array()) throw protocol_error("inspect_lock: LRANGE did not return a list");
    for (const auto& e : r[6].elements()) out.fair_queue.push_back(e.text());
    return out;
}

}  // namespace redcoord
