#include <redcoord/core/detail/snapshot.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/election/election_options.hpp>
#include <redcoord/election/inspect.hpp>

#include <charconv>
#include <chrono>

namespace redcoord {
namespace {

// ZRANGE ... WITHSCORES: identity, end of its term (Unix ms), in score order. Entries that have
// ended but that no round has dropped yet are left out.
std::vector<election_candidate> candidates_of(const reply& r, std::chrono::microseconds now,
                                              const std::string& key) {
    std::vector<election_candidate> out;
    if (!r.is_array() || r.elements().size() % 2 != 0)
        throw protocol_error("inspect_election: unexpected ZRANGE reply for " + key);
    const auto& e = r.elements();
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
    for (std::size_t i = 0; i < e.size(); i += 2) {
        const std::string score = e[i + 1].text();
        long long end_ms = 0;
        const auto [p, ec] = std::from_chars(score.data(), score.data() + score.size(), end_ms);
        if (ec != std::errc{} || p != score.data() + score.size())
            throw protocol_error("inspect_election: a candidate's term end is not an integer in " +
                                 key);
        if (end_ms > now_ms)
            out.push_back({e[i].text(), std::chrono::milliseconds(end_ms - now_ms)});
    }
    return out;
}

}  // namespace

election_inspection inspect_election(connection_pool& pool, std::string_view name,
                                     std::string_view prefix) {
    validate_name(name, "election name");
    const auto k = make_election_keys(prefix, name);
    const auto r = detail::read_snapshot(pool, {{"HMGET", k.selector, "holder", "epoch", "round"},
                                                {"PTTL", k.selector},
                                                {"GET", k.epoch},
                                                {"TIME"},
                                                {"ZRANGE", k.candidates, "0", "-1", "WITHSCORES"}});
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
    out.candidates = candidates_of(r[4], detail::server_time(r[3]), k.candidates);
    return out;
}

}  // namespace redcoord
