#pragma once
/// @file
/// The compact envelope redcoord puts around every payload it publishes, and the bounded
/// window of recently seen envelope ids used to drop the second copy of a signal that
/// arrives over both the master and a replica link (DESIGN.md §Signaling).
///
/// Wire format (binary-safe): 4 magic bytes `"\0rc\1"`, a 16-byte id (8 bytes naming the
/// publishing hub, 8 bytes of its message counter, big-endian), then the payload verbatim.
/// A payload without the magic is a *plain* message (e.g. `redis-cli PUBLISH`).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

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
/// Thread-safety: none; the owner locks.
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

/// Decides which copy of an enveloped signal is the first one a hub sees.
///
/// Thread-safety: none; the owner locks.
class dedup_window {
public:
    /// @param capacity how many recent deliveries are remembered; must be >= 1.
    explicit dedup_window(std::size_t capacity, std::size_t max_origins = 4096);
    /// True for the first copy of the delivery (envelope `id`, `channel`, `pattern`).
    [[nodiscard]] bool first_copy(std::string_view id, std::string_view channel, std::string_view pattern);
    /// Publishers currently tracked.
    [[nodiscard]] std::size_t origins() const noexcept { return 0; }

private:
    recent_ids recent_;
};

}  // namespace redcoord::detail
