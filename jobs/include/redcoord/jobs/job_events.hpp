#pragma once
/// @file
/// Events of a job_queue (completed, failed, stalled, progress) as Boost.Signals2 callbacks,
/// delivered through a signal_hub: exactly once per connected slot while its links are up.

#include <redcoord/core/export.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/signaling/signal_hub.hpp>

#include <boost/signals2/connection.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord {

/// What happened to a job.
enum class job_event_kind {
    completed,  ///< A worker completed it.
    failed,     ///< An attempt failed (it is retried, dead or failed: see job_queue::get()).
    stalled,    ///< Its worker was lost or its timeout passed; reclaimed by another worker.
    progress,   ///< Its handler reported progress.
};

/// One event.
struct job_event {
    job_event_kind kind{};  ///< What happened.
    std::string id;         ///< The job's id.
    /// failed: the error text; progress: the value reported; otherwise empty.
    std::string data;
};

/// Subscribes to a job_queue's events.
///
/// Workers publish each event once, inside the script that changes the job (stalled events:
/// by the worker whose claim reclaimed the job, right after it). They travel on the queue's
/// events channel in the hub's envelope, so a slot sees each event exactly once however many
/// links (master and replicas) carry it; events published while no link is up are lost, as
/// pub/sub always loses them (job_queue::get() tells the state at any time).
///
/// @par Thread safety
/// on() from any thread. Slots run on the hub's callback strand, one at a time.
///
/// @par Errors
/// on() throws invalid_argument for an empty slot, and connection_error when no link confirms
/// the subscription within the hub's subscribe_timeout.
class job_events {
public:
    /// Events of `queue` through `hub` (both must outlive this object and its connections).
    job_events(job_queue& queue, signal_hub& hub);

    /// Connects `slot` to every event of the queue; returns when the subscription is
    /// confirmed. Disconnect by destroying the returned connection.
    [[nodiscard]] boost::signals2::scoped_connection on(std::function<void(const job_event&)> slot);

    /// The wire form of an event (for workers): "<kind>\n<id>\n<data>".
    [[nodiscard]] static std::string encode(job_event_kind kind, std::string_view id,
                                            std::string_view data);
    /// The event in `payload`, or nullopt for a payload of another form.
    [[nodiscard]] static std::optional<job_event> decode(std::string_view payload);

private:
    signal_hub& hub_;
    std::string channel_;
};

}  // namespace redcoord

REDCOORD_API_END
