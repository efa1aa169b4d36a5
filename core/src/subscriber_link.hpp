#pragma once
// Private to core: one subscriber's link, the state shared by the subscriber (its owner),
// the link reactor's reader thread (while the link has a session) and its dial timer's tick
// (while a dial for it runs on a tick worker).

#include "connection_impl.hpp"

#include <redcoord/core/detail/link_policy.hpp>
#include <redcoord/core/detail/master_source.hpp>
#include <redcoord/core/detail/subscription_book.hpp>
#include <redcoord/core/detail/thread_annotations.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/subscriber.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace redcoord::detail {

class subscriber_link : public std::enable_shared_from_this<subscriber_link> {
public:
    using command = std::pair<std::string, std::vector<std::string>>;

    // `sentinel`: the runtime's resolver of a Sentinel endpoint, else null. `o.runtime` is
    // not kept (the subscriber holds the runtime; the reader thread must not release it).
    subscriber_link(endpoint e, subscriber::message_handler on_message, subscriber_options o,
                    subscriber::state_handler on_state, std::shared_ptr<master_source> sentinel);

    // Set at construction, never changed.
    const endpoint ep;
    const subscriber_options opts;
    // Set for a Sentinel endpoint: each dial goes to the master it resolves.
    const std::shared_ptr<master_source> resolver;

    // Whoever reads or writes the connection holds read_mu: the reactor's reader thread, or a
    // waiter in help_read(). Handlers run with it held, so they run one at a time, in arrival
    // order, and closing the link can wait for a running one.
    mutable mutex read_mu REDCOORD_ACQUIRED_BEFORE(mu);
    // The current session's connection; only the reader thread sets and resets it.
    std::unique_ptr<connection::impl> conn REDCOORD_GUARDED_BY(read_mu);
    // A helper's read failed: the reader ends the session (it owns reconnecting).
    bool helper_failed REDCOORD_GUARDED_BY(read_mu) = false;
    subscriber::message_handler on_message REDCOORD_GUARDED_BY(read_mu);
    subscriber::state_handler on_state REDCOORD_GUARDED_BY(read_mu);

    mutable mutex mu;
    std::condition_variable cv;  // subscribe() waiters, with mu
    subscription_book book REDCOORD_GUARDED_BY(mu);
    // Commands for the reader to send; recorded in `book` when the reader takes them, so the
    // book's order is the wire order (the reader also sends PINGs).
    std::vector<command> outbox REDCOORD_GUARDED_BY(mu);
    bool link_up REDCOORD_GUARDED_BY(mu) = false;
    bool drop_requested REDCOORD_GUARDED_BY(mu) = false;
    std::uint64_t connect_count REDCOORD_GUARDED_BY(mu) = 0;
    link_policy policy REDCOORD_GUARDED_BY(mu);

    // Its dials: a timer on the runtime's timer service, set by link_reactor::attach() before
    // the first dial and not changed after. Each tick dials once on a tick worker (blocking up
    // to the connect timeout) and returns when to try again.
    std::unique_ptr<timer> dial_timer;

    // Set once by the subscriber's destructor: no handler runs after it, no dial starts.
    std::atomic<bool> closed{false};
    // Steady time of the last data read, by anyone (the reader or a helper).
    std::atomic<std::int64_t> last_data_ns{0};
    // Demand-driven reading (subscriber_tuning::drain_interval > 0). `demand` counts who
    // wants prompt delivery; `watching` says whether the reader's poll() includes the socket.
    // The reader clears `watching` before it reads `demand`, and adjust_demand() raises
    // `demand` before it reads `watching` (both sequentially consistent), so either the
    // reader sees the demand or the raiser sees an idle reader and wakes it.
    std::atomic<int> demand{0};
    std::atomic<bool> watching{true};
    // The link waits in the reactor's list of links to look at.
    std::atomic<bool> kick_queued{false};

    // The reader thread's own view of the session; no other thread touches these.
    struct session_view {
        bool active = false;        // a connection was handed to the reader and not yet ended
        int fd = -1;                // conn's socket
        bool announced_up = false;  // on_state(true) ran for this session
        bool watched = true;        // the last poll() watched the socket
        bool want_write = false;    // output is waiting for the socket to take it
    } session;

    [[nodiscard]] bool lazy() const noexcept { return opts.tuning.drain_interval.count() > 0; }
    [[nodiscard]] bool all_confirmed() const REDCOORD_REQUIRES(mu) {
        return link_up && book.all_confirmed();
    }

    // Reads and dispatches what has arrived, if anything, without waiting (another reader
    // may have taken it first). @throws as connection::impl::read_if_ready.
    bool read_available() REDCOORD_REQUIRES(read_mu) REDCOORD_EXCLUDES(mu);
    // help_read(): a read by a waiting thread; false when someone else is reading or the
    // read failed (then `helper_failed` is set and the caller must kick the reactor).
    bool help_read(bool& failed) noexcept REDCOORD_EXCLUDES(read_mu, mu);
    // The state handler, unless closed. Swallows exceptions.
    void notify_state(bool up) REDCOORD_REQUIRES(read_mu) REDCOORD_EXCLUDES(mu);
    // Appends `cmd` to the connection's output.
    void append(const std::vector<std::string>& cmd) REDCOORD_REQUIRES(read_mu);
    // Writes buffered output without blocking; true when all of it went out.
    // @throws as connection::impl::fail_io.
    bool flush_some() REDCOORD_REQUIRES(read_mu);

    // True when the calling thread is running one of this link's handlers.
    [[nodiscard]] bool in_own_handler() const noexcept;

private:
    void handle(const reply& r) REDCOORD_REQUIRES(read_mu) REDCOORD_EXCLUDES(mu);
    // opts.tuning.on_refused, if set.
    void told_refused() REDCOORD_REQUIRES(read_mu) REDCOORD_EXCLUDES(mu);
    void deliver(const pubsub_message& m) REDCOORD_REQUIRES(read_mu);
};

}  // namespace redcoord::detail
