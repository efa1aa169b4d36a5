#pragma once
/// @file
/// The compact envelope redcoord puts around every payload it publishes, and the bounded
/// window of recently seen envelope ids used to drop the second copy of a signal that
/// arrives over both the master and a replica link (docs/signaling.md).
///
/// Wire format (binary-safe): 4 magic bytes `"\0rc\1"`, a 16-byte id (8 bytes naming the
/// publishing hub, 8 bytes of its message counter, big-endian), then the payload verbatim.
/// A payload without the magic is a *plain* message (for example `redis-cli PUBLISH`).

#include <redcoord/core/export.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// The 4 magic bytes that open an envelope.
inline constexpr std::string_view envelope_magic{"\0rc\1", 4};
/// Length of an envelope id in bytes.
inline constexpr std::size_t envelope_id_size = 16;
/// Bytes an envelope adds in front of the payload.
inline constexpr std::size_t envelope_overhead = envelope_magic.size() + envelope_id_size;

/// Builds the envelope header (magic + id) for message number `seq` of the hub `origin`.
[[nodiscard]] std::string envelope_header(std::uint64_t origin, std::uint64_t seq);

/// An envelope split into its id and payload (views into the parsed string).
struct opened_envelope {
    std::string_view id;       ///< The 16-byte id.
    std::string_view payload;  ///< The user payload.
};

/// Splits `wire` when it is an envelope; nullopt for a plain message.
[[nodiscard]] std::optional<opened_envelope> open_envelope(std::string_view wire) noexcept;

/// A set of the last `capacity` ids seen, oldest evicted first.
///
/// @par Thread safety
/// None; the owner locks.
///
/// @par Errors
/// Never throws, except std::bad_alloc.
///
/// @par Cost
/// In memory only: O(1) per insert and lookup, memory bounded by its capacity.
class recent_ids {
public:
    /// @param capacity how many ids are remembered; must be >= 1.
    explicit recent_ids(std::size_t capacity);
    /// Records `id`; returns false when it is already in the window (a duplicate).
    [[nodiscard]] bool insert(std::string id);
    /// Ids currently remembered.
    [[nodiscard]] std::size_t size() const noexcept { return set_.size(); }

private:
    std::size_t capacity_;
    std::unordered_set<std::string> set_;
    std::deque<std::string> order_;
};

/// Decides which copy of an enveloped signal is the first one a hub sees, so that each
/// delivery reaches waiters once although it arrives over the master and every replica link.
///
/// A delivery is (envelope id, channel, pattern): one envelope PUBLISHed to two channels by a
/// user script is two deliveries, and the channel and pattern messages of one
/// PUBLISH are two deliveries too.
///
/// Two defences, because a count window alone cannot hold a replica's late replay (a replica
/// that partially resyncs re-runs its backlog's PUBLISHes, a burst that can be far larger than
/// the window):
/// - the last `capacity` deliveries are remembered exactly (oldest forgotten first);
/// - per publishing hub (the id's origin half) a *floor*: the highest sequence number among
///   its deliveries that left the window. A copy at or below its origin's floor was seen
///   before and forgotten, so it is a replay and is dropped.
///
/// The floor assumes a hub's signals reach the server roughly in sequence order (each hub
/// numbers them when it builds the envelope). A signal overtaken by more than `capacity` later
/// deliveries would be dropped as a replay; the window is sized far above any realistic
/// overtaking (16384 by default). At most `max_origins` floors are kept, the least recently
/// updated forgotten first; a replay from a forgotten origin beyond the window is delivered.
///
/// @par Thread safety
/// None; the owner locks.
///
/// @par Errors
/// Never throws, except std::bad_alloc.
///
/// @par Cost
/// In memory only: O(1) per delivery on average, memory bounded by the window and the number of
/// publishers seen.
class dedup_window {
public:
    /// @param capacity how many recent deliveries are remembered exactly; must be >= 1.
    /// @param max_origins how many publishers' floors are kept; must be >= 1.
    /// @throws invalid_argument for a zero bound.
    explicit dedup_window(std::size_t capacity, std::size_t max_origins = 4096);
    /// True for the first copy of the delivery (envelope `id`, `channel`, `pattern`); false
    /// for a copy seen before (within the window, or at or below its origin's floor). `id`
    /// must be an envelope id (envelope_id_size bytes).
    [[nodiscard]] bool first_copy(std::string_view id, std::string_view channel,
                                  std::string_view pattern);
    /// Deliveries remembered exactly.
    [[nodiscard]] std::size_t size() const noexcept { return set_.size(); }
    /// Publishers whose floor is kept.
    [[nodiscard]] std::size_t origins() const noexcept { return floors_.size(); }

private:
    struct entry {
        std::string key;  // id, then the channel and pattern, NUL-separated
        std::uint64_t origin;
        std::uint64_t seq;
    };
    struct floor {
        std::uint64_t seq;
        std::uint64_t touched;  // update counter, to forget the stalest origin first
    };
    void forget_oldest();
    void raise_floor(std::uint64_t origin, std::uint64_t seq);

    std::size_t capacity_;
    std::size_t max_origins_;
    std::unordered_set<std::string> set_;
    std::deque<entry> order_;
    std::unordered_map<std::uint64_t, floor> floors_;
    std::uint64_t updates_ = 0;
};

}  // namespace redcoord::detail

REDCOORD_API_END
