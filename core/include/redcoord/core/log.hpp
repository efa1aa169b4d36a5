#pragma once
/// @file
/// The log sink redcoord reports its important events to: one record per event (a lock lost,
/// leadership gained or lost, a Sentinel failover followed, a dead consumer's messages
/// recovered, a pub/sub link down or up, a pool reconnecting), with structured fields.
/// Nothing is printed by default: install a sink on the runtime (runtime::set_log_sink()).
/// examples/spdlog_sink shows an adapter to spdlog.

#include <redcoord/core/export.hpp>

#include <span>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// How important a record is.
enum class log_level {
    debug,    ///< Detail for tracing redcoord itself.
    info,     ///< A normal but notable change (leadership gained, a link back up).
    warning,  ///< Something went wrong and was handled (a lock lost, a link down).
    error,    ///< Something went wrong and could not be handled.
};

/// The lower-case name of `l` ("debug", "info", "warning", "error").
[[nodiscard]] std::string_view to_string(log_level l) noexcept;

/// One structured field of a record, e.g. `{"resource", "orders"}`.
struct log_field {
    std::string_view key;    ///< Field name (snake_case, stable across versions).
    std::string_view value;  ///< Field value, already formatted.
};

/// One event. The views are valid only during log_sink::write(): copy what you keep.
struct log_record {
    log_level level = log_level::info;  ///< Importance.
    /// The part that speaks: "lock", "election", "queue", "signaling", "jobs", "pool",
    /// "sentinel".
    std::string_view component;
    std::string_view message;           ///< A human sentence, without the fields.
    std::span<const log_field> fields;  ///< Structured fields (resource, identity, endpoint, ...).
};

/// Receives redcoord's records. Implement write() to forward to your logging library.
///
/// Thread-safety: write() is called from any of redcoord's threads (the caller's, the
/// runtime's pub/sub threads and callback executor; never its timer thread, whose records are
/// queued to the callback executor) and possibly from several at once; it must be
/// thread-safe. It should be quick and must not call back into the object that logs.
/// Exceptions thrown by write() are swallowed.
class log_sink {
public:
    virtual ~log_sink() = default;
    /// Handles one record.
    virtual void write(const log_record& r) = 0;
};

/// `fields` as ` key=value key=value` (values with spaces or quotes quoted), for sinks that
/// write plain lines.
[[nodiscard]] std::string format_fields(std::span<const log_field> fields);

}  // namespace redcoord
REDCOORD_API_END
