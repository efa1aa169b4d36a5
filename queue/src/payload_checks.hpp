#pragma once
// Client-side payload checks shared by list_queue and reliable_queue.
// The "protocol error" half belongs in core (connection should poison itself on it, review
// C11/Q9); core is owned elsewhere for now, so the queue does it at its call sites.

#include <redcoord/core/connection.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/queue/limits.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace redcoord::detail {

/// Throws invalid_argument unless 1 <= max_payload <= max_payload_limit.
inline void validate_max_payload(std::size_t max_payload, std::string_view who) {
    if (max_payload < 1 || max_payload > max_payload_limit)
        throw invalid_argument(std::string(who) + ": max_payload must be in 1.." +
                               std::to_string(max_payload_limit));
}

/// Throws payload_too_large when any payload is longer than `max_payload`.
inline void check_payloads(std::span<const std::string> payloads, std::size_t max_payload,
                           std::string_view who) {
    for (const auto& p : payloads)
        if (p.size() > max_payload)
            throw payload_too_large(std::string(who) + ": a payload of " +
                                    std::to_string(p.size()) + " bytes exceeds max_payload (" +
                                    std::to_string(max_payload) + ")");
}

/// After `-ERR Protocol error ...` the server closes the link (an argument over its
/// proto-max-bulk-len, for one): the connection must not go back to the pool, or the next
/// borrower would read that EOF as its own reply.
inline void poison_if_desynchronised(connection& c, const reply_error& e) noexcept {
    if (std::string_view(e.what()).find("Protocol error") != std::string_view::npos) c.poison();
}

}  // namespace redcoord::detail
