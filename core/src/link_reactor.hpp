#pragma once
// Private to core: a runtime's pub/sub reader, shared by its subscribers, and their dials.
//
//   subscriber ──┐                                    ┌── dials: a timer per link on the
//   subscriber ──┼── link_reactor (one per runtime) ──┤   runtime's tick workers (blocking
//   subscriber ──┘                                    │   (re)connects, Sentinel resolution)
//                                                     └── reader thread: poll(eventfd + every
//                                                         up link): sends, reads, handlers,
//                                                         PING / silence, drains
//
// A dial hands its new connection to the reader; the reader arms the link's timer with the
// time of the next attempt when a session ends, and a failed dial returns it. A server that
// does not answer a connect holds one tick worker (the timer service starts another for the
// other timers after 10 ms), never another link's reading or dial.

#include "subscriber_link.hpp"

#include <redcoord/core/detail/timer_service.hpp>

#include <chrono>
#include <memory>
#include <thread>

namespace redcoord::detail {

class link_reactor {
public:
    // A new reactor (a runtime's: runtime::reactor()) whose dials run on `timers`, which must
    // outlive every attach(); it stops when the last holder lets go, and at exit it is synced
    // first (sync(), 2 s at most). @throws std::system_error when the reader cannot start.
    static std::shared_ptr<link_reactor> create(timer_service& timers);

    explicit link_reactor(timer_service& timers);
    // Stops the reader thread and waits for it unless called on it (a handler that destroyed
    // the last subscriber), which then ends by itself. A dial under way ends by itself; its
    // connection is dropped.
    ~link_reactor();
    link_reactor(const link_reactor&) = delete;
    link_reactor& operator=(const link_reactor&) = delete;

    // Starts serving `l`: its first dial starts at once, on a tick worker.
    // @throws std::system_error when the timer service cannot start its first thread.
    void attach(const std::shared_ptr<subscriber_link>& l);
    // Forgets `l` (already marked closed): its session ends without handlers, a queued dial
    // is dropped, a dial under way is discarded when it completes. Does not wait.
    void detach(const std::shared_ptr<subscriber_link>& l);
    // Has the reader look at `l` soon: its outbox, a drop request, a failed helper read.
    void kick(subscriber_link& l);
    // Has the reader re-evaluate every link (a demand raised on an unwatched link).
    void wake() noexcept;
    // Returns once the dials under way ended and the reader has handled and released every
    // removal requested before the call, or after `bound`. Not from the reader thread.
    void sync(std::chrono::milliseconds bound);

    struct core;

private:
    std::shared_ptr<core> core_;
    std::thread reader_;
};

}  // namespace redcoord::detail
