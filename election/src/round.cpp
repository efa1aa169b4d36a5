#include "round.hpp"

#include <redcoord/core/detail/lease_schedule.hpp>
#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>

namespace redcoord::detail {

round_reply parse_round_reply(const reply& r) {
    if (r.is_error()) throw_reply_error(r.text(), "EVALSHA");
    if (!r.is_array() || r.elements().size() != 5)
        throw protocol_error("election: unexpected reply shape from the campaign script");
    const auto& e = r.elements();
    for (std::size_t i : {0, 1, 2, 4})
        if (!e[i].is_integer())
            throw protocol_error("election: unexpected reply shape from the campaign script");
    round_reply out;
    out.holder_is_us = e[0].integer() == 1;
    out.epoch = static_cast<std::uint64_t>(e[1].integer());
    out.round = e[2].integer();
    out.holder = e[3].maybe_text();
    out.new_term = e[4].integer() == 1;
    return out;
}

campaign_result judge_round(const round_reply& reply, std::chrono::steady_clock::time_point sent_at,
                            std::chrono::steady_clock::time_point received_at, int acks,
                            std::chrono::milliseconds term, std::chrono::milliseconds drift,
                            std::size_t replicas) {
    campaign_result res;
    res.holder_is_us = reply.holder_is_us;
    res.epoch = reply.epoch;
    res.round = reply.round;
    res.holder = reply.holder;
    res.new_term = reply.new_term;
    res.acks = replicas == 0 ? -1 : acks;
    res.sent_at = sent_at;
    // The server may have set the expiry any time after the send: the lease counts from it.
    res.deadline = lease_schedule(term, drift).valid_until(sent_at);
    const bool acknowledged =
        replicas == 0 || (acks >= 0 && static_cast<std::size_t>(acks) >= replicas);
    res.leader = res.holder_is_us && acknowledged && !lease_over(res.deadline, received_at);
    return res;
}

}  // namespace redcoord::detail
