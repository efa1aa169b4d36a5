#pragma once
// Private to core: a runtime's pub/sub reader and dialer, shared by its subscribers.
//
//   subscriber ──┐                                    ┌── dialer thread: blocking (re)connects,
//   subscriber ──┼── link_reactor (one per runtime) ──┤   Sentinel resolution, backoff waits
//   subscriber ──┘                                    └── reader thread: poll(eventfd + every
//                                                         up link): sends, reads, handlers,
//                                                         PING / silence, drains
//
// The dialer hands each new connection to the reader; the reader hands each ended session
// back to the dialer with the time of the next attempt. A server that does not answer a
// connect therefore delays other links' connects (one at a time), never their reading.

#include "subscriber_link.hpp"

#include <chrono>
#include <memory>
#include <thread>

namespace redcoord::detail {

class link_reactor {
public:
    // A new reactor (a runtime's: runtime::reactor()); it stops when the last holder lets go,
    // and at exit it is synced first (sync(), 2 s at most).
    static std::shared_ptr<link_reactor> create();

    link_reactor();
    // Stops both threads; waits for them unless called on one of them (a handler that
    // destroyed the last subscriber), which then ends by itself. Waits at most for the
    // dial under way (one connect_timeout).
    ~link_reactor();
    link_reactor(const link_reactor&) = delete;
    link_reactor& operator=(const link_reactor&) = delete;

    // Starts serving `l`: its first dial starts at once.
    void attach(const std::shared_ptr<subscriber_link>& l);
    // Forgets `l` (already marked closed): its session ends without handlers, a queued dial
    // is dropped, a dial under way is discarded when it completes. Does not wait.
    void detach(const std::shared_ptr<subscriber_link>& l);
    // Has the reader look at `l` soon: its outbox, a drop request, a failed helper read.
    void kick(subscriber_link& l);
    // Has the reader re-evaluate every link (a demand raised on an unwatched link).
    void wake() noexcept;
    // Returns once the reader has handled and released every removal requested before the
    // call, or after `bound`. Not from a reactor thread.
    void sync(std::chrono::milliseconds bound);

    struct core;

private:
    std::shared_ptr<core> core_;
    std::thread reader_;
    std::thread dialer_;
};

}  // namespace redcoord::detail
