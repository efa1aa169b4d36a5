#pragma once
// The election round's decisions, sans I/O: what one campaign reply means for this candidate
// (leader or not, epoch, lease end) and when a leader whose renewals fail must step down.
// master_selector sends the script and reads the clock; these functions only judge.

#include <redcoord/core/reply.hpp>
#include <redcoord/election/campaign_result.hpp>
#include <redcoord/election/election_options.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace redcoord::detail {

/// The campaign script's reply {is_holder, epoch, round, holder, new_term}, decoded.
struct round_reply {
    bool holder_is_us = false;
    std::uint64_t epoch = 0;
    std::int64_t round = 0;
    std::optional<std::string> holder;
    bool new_term = false;
};

/// Decodes the campaign script's reply.
/// @throws reply_error for an error reply (the server refused the script);
/// @throws protocol_error for any other shape.
[[nodiscard]] round_reply parse_round_reply(const reply& r);

/// What a round means. `sent_at` is taken just before the send and `received_at` just after
/// the reply (steady clock); `acks` is WAIT's count, or -1 when `replicas` == 0. The round
/// makes this candidate leader only when the server recorded it as holder, enough replicas
/// acknowledged, and the reply came before the lease end the round would confirm: an answer
/// that arrives later confirms a lease that has already run out.
[[nodiscard]] campaign_result judge_round(const round_reply& reply,
                                          std::chrono::steady_clock::time_point sent_at,
                                          std::chrono::steady_clock::time_point received_at,
                                          int acks, std::chrono::milliseconds term,
                                          std::chrono::milliseconds drift, std::size_t replicas);

/// True when a leadership whose lease ends at `lease_end` must be given up at `now`: the lease
/// end itself is already too late to act as leader (half-open interval [confirmed, lease_end)).
[[nodiscard]] constexpr bool lease_over(std::chrono::steady_clock::time_point lease_end,
                                        std::chrono::steady_clock::time_point now) noexcept {
    return now >= lease_end;
}

/// Whether a round that renewed our term (not `new_term`) may keep us leader: only when its
/// reply came before the lease it continued (`previous_lease_end`) ran out. A later reply finds
/// a candidate that has already stepped down at that lease end; confirming the same epoch again
/// would give two of its terms one fencing token. Declined, the next round starts a new term.
[[nodiscard]] constexpr bool renewal_in_time(
    bool new_term, std::chrono::steady_clock::time_point previous_lease_end,
    std::chrono::steady_clock::time_point received_at) noexcept {
    return new_term || !lease_over(previous_lease_end, received_at);
}

}  // namespace redcoord::detail
