#include <redcoord/core/detail/snapshot.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/election/election_options.hpp>
#include <redcoord/election/inspect.hpp>

namespace redcoord {

election_inspection inspect_election(connection_pool& pool, std::string_view name,
                                     std::string_view prefix) {
    validate_name(name, "election name");
    const auto k = make_election_keys(prefix, name);
    const auto r = detail::read_snapshot(pool, {{"HMGET", k.selector, "holder", "epoch", "round"},
                                                {"PTTL", k.selector},
                                                {"GET", k.epoch}});
    if (!r[0].is_array() || r[0].elements().size() != 3)
        throw protocol_error("inspect_election: unexpected HMGET reply");
    const auto& f = r[0].elements();
    election_inspection out;
    // A selector whose holder field is gone is a round counter without a leader (a candidate's
    // round repaired the expiry of a resigned or expired term).
    out.leader = f[0].maybe_text();
    if (out.leader) {
        out.epoch = detail::counter_of(f[1], "the epoch of " + k.selector).value_or(0);
        out.term_left = detail::ttl_of(r[1]);
        out.rounds = detail::counter_of(f[2], "the round counter of " + k.selector).value_or(0);
    }
    out.last_epoch = detail::counter_of(r[2], "the epoch counter " + k.epoch);
    return out;
}

}  // namespace redcoord
