#pragma once
/// @file
/// What one campaign round of master_selector observed, apart from the selector: the sans-I/O
/// elector engine reads it without pulling in connections and pools.

#include <redcoord/core/export.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

REDCOORD_API_BEGIN
namespace redcoord {

/// What one campaign round observed.
struct campaign_result {
    /// True when this candidate leads: the server recorded it as holder, the required replicas
    /// acknowledged, and the reply arrived before `deadline`.
    bool leader = false;
    /// True when the server recorded this candidate as holder (even if not confirmed in time).
    bool holder_is_us = false;
    /// True when this round started a new leadership: the selector was absent, or named us
    /// after our own local lease had run out (we had stepped down). A new epoch either way.
    bool new_term = false;
    /// The fencing token of the current leadership (ours or the holder's); 0 when unknown.
    /// Strictly greater for every new leadership (see master_selector for the caveats); in
    /// practice about the server's clock in microseconds when the leadership began.
    std::uint64_t epoch = 0;
    /// The selector's counter after this round's increment (the master_selector value).
    std::int64_t round = 0;
    /// Identity of the current holder (nullopt when the server reported none).
    std::optional<std::string> holder;
    /// Replica acknowledgements reported by WAIT; -1 when no replicas were required.
    int acks = -1;
    /// Time just before the round was sent, on the runtime's clock (runtime_clock: the steady
    /// clock unless a test advanced it).
    std::chrono::steady_clock::time_point sent_at{};
    /// The local deadline this round confirms when it made us leader: sent_at + term - drift
    /// (the runtime's clock, as sent_at).
    std::chrono::steady_clock::time_point deadline{};
};

}  // namespace redcoord
REDCOORD_API_END
