#pragma once
/// @file
/// Why a leader_elector's leadership ended, apart from the elector: the sans-I/O elector engine
/// reports it without pulling in connections and pools.

#include <redcoord/core/export.hpp>

#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// Why a leadership ended.
enum class revoke_reason {
    lost,        ///< A round found another holder (or a new epoch replaced ours).
    expired,     ///< The local deadline passed before a renewal was confirmed (server reachable).
    resigned,    ///< resign() or stop() gave it up.
    connection,  ///< The local deadline passed while the server could not be reached.
};

/// "lost", "expired", "resigned", "connection".
[[nodiscard]] std::string_view to_string(revoke_reason r) noexcept;

}  // namespace redcoord
REDCOORD_API_END
