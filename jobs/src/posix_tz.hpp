#pragma once
// Private to queue: the POSIX TZ rule string (POSIX.1-2017, 8.3, with the RFC 8536 extension
// of hours in -167..167), as found at the end of a TZif file: "CET-1CEST,M3.5.0,M10.5.0/3".

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace redcoord::detail {

struct posix_tz {
    // A rule date: Jn (1..365, February 29 never counted), n (0..365), or Mm.w.d.
    struct date {
        enum class form {
            julian1,
            julian0,
            month_week_day
        } kind = form::month_week_day;
        int day = 0;                   // n for the Julian forms, d (0 = Sunday) for Mm.w.d
        int month = 0;                 // m (1..12)
        int week = 0;                  // w (1..5, 5 = the last)
        std::int32_t time = 2 * 3600;  // seconds after local midnight; may be negative or > 24 h
    };
    std::int32_t std_offset = 0;  // seconds east of UTC (local = UTC + offset)
    std::optional<std::int32_t> dst_offset;
    date start, end;  // into and out of daylight time (when dst_offset)

    // @throws invalid_argument for a malformed string.
    static posix_tz parse(std::string_view s);
    // The offset at the instant `t` (seconds since the epoch).
    [[nodiscard]] std::int32_t offset_at(std::int64_t t) const;
};

}  // namespace redcoord::detail
