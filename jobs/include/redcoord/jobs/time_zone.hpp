#pragma once
/// @file
/// The UTC offsets of a named (IANA) time zone, read from the system's TZif files, for
/// cron schedules in local time. (libstdc++ 12 has no `std::chrono::tzdb`.) Sources: RFC 8536
/// "The Time Zone Information Format (TZif)", and POSIX.1-2017 section 8.3 for the TZ rule
/// string at its end.

#include <redcoord/core/export.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// One time zone's offsets from UTC over time: the transitions of its TZif file, then the
/// POSIX TZ rule of the file's footer for times after the last one.
///
/// @par Thread safety
/// Immutable after construction; share freely.
///
/// @par Errors
/// load() throws invalid_argument for a name that is empty, absolute, contains `..` or a
/// character other than letters, digits, `/`, `_`, `-` and `+`, or that names no readable
/// TZif file; parse() for malformed data.
class time_zone {
public:
    /// Coordinated Universal Time (offset zero at all times).
    [[nodiscard]] static time_zone utc();
    /// Reads the zone `name` (for example `Europe/Berlin`; `UTC` and `Etc/UTC` need no file)
    /// from `dir`; an empty `dir` means `$TZDIR`, else /usr/share/zoneinfo (Debian's
    /// `tzdata` package).
    [[nodiscard]] static time_zone load(std::string_view name, std::string dir = {});
    /// Builds the zone `name` from the bytes of a TZif file (version 1 to 4).
    [[nodiscard]] static time_zone parse(std::string_view name, std::string_view tzif);

    /// The zone's offset from UTC at the instant `t` (local time = `t` + offset).
    [[nodiscard]] std::chrono::seconds offset_at(std::chrono::sys_seconds t) const;
    /// The zone's name as given.
    [[nodiscard]] const std::string& name() const noexcept;

    struct data;  ///< Internal.

private:
    explicit time_zone(std::shared_ptr<const data> d) : d_(std::move(d)) {}
    std::shared_ptr<const data> d_;
};

}  // namespace redcoord

REDCOORD_API_END
