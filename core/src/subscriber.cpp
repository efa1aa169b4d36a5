#include "connection_impl.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/subscription_book.hpp>
#include <redcoord/core/sentinel.hpp>
#include <redcoord/core/subscriber.hpp>
#include <redcoord/core/token.hpp>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <utility>
#include <thread>

namespace redcoord {

using clock_type = std::chrono::steady_clock;

struct subscriber::impl {
    endpoint ep;
    // Set for a Sentinel endpoint: each (re)connect goes to the master it resolves.
    std::shared_ptr<sentinel_resolver> resolver;
    boost::signals2::scoped_connection on_switch;
    // The failover slot runs on a resolver thread; it reaches this impl only through the hook,
    // which the destructor clears first (a disconnect does not wait for a running slot).
    struct switch_hook {
        std::mutex mu;
        impl* target = nullptr;
    };
    std::shared_ptr<switch_hook> hook;
    message_handler on_message;
    state_handler on_state;
    subscriber_options opts;

    mutable std::mutex mu;
    std::condition_variable cv;
    detail::subscription_book book;
    // Commands for the reader to send; recorded in `book` when the reader takes them, so the
    // book's order is the wire order (the reader also sends PINGs).
    std::vector<std::pair<std::string, std::vector<std::string>>> outbox;
    bool link_up = false;
    bool drop_requested = false;
    std::uint64_t connect_count = 0;

    std::atomic<bool> stopping{false};
    int wake_fd = -1;
    std::thread reader;

    // Whoever reads the link holds read_mu: the reader thread, or a caller of help_read()
    // (a waiter that would otherwise sleep until the reader thread hands it the message).
    // Everything touching the current connection happens under it, so handlers still run
    // one at a time, in arrival order.
    std::mutex read_mu;
    connection::impl* current = nullptr;       // the session's connection; under read_mu
    bool helper_failed = false;                // a helper's read failed; under read_mu
    std::atomic<std::int64_t> last_data_ns{0}; // steady time of the last data read, by anyone

    // Demand-driven reading (subscriber_options::drain_interval > 0). `demand` counts who
    // wants prompt delivery; `watching` says whether the reader's poll() includes the socket.
    // The reader clears `watching` before it reads `demand`, and adjust_demand() raises
    // `demand` before it reads `watching` (both sequentially consistent), so either the
    // reader sees the demand or the raiser sees an idle reader and wakes it: no blocked
    // waiter is left to the next drain.
    std::atomic<int> demand{0};
    std::atomic<bool> watching{true};
    [[nodiscard]] bool lazy() const noexcept { return opts.drain_interval.count() > 0; }

    void adjust_demand(int delta) noexcept {
        if (delta > 0) {
            if (demand.fetch_add(delta) <= 0 && !watching.load()) wake();
        } else if (delta < 0) {
            demand.fetch_sub(-delta);
        }
    }

    // Whether the reader should watch the socket now (always, unless reading lazily).
    bool should_watch() {
        if (!lazy()) return true;
        watching.store(false);
        bool want = demand.load() > 0;
        if (!want) {
            // Confirmations of a (re)subscription are read promptly so connected() and the
            // state handler follow the link without waiting for a drain.
            std::lock_guard lk(mu);
            want = !all_confirmed_locked();
        }
        if (want) watching.store(true);
        return want;
    }

    void wake() {
        std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(wake_fd, &one, sizeof one);
    }

    bool all_confirmed_locked() const { return link_up && book.all_confirmed(); }

    void notify_state(bool up) {
        if (!on_state) return;
        try {
            on_state(up);
        } catch (...) {
        }
    }

    void deliver(pubsub_message m) {
        try {
            on_message(m);
        } catch (...) {
            // A throwing handler must not kill the reader; the caller reports its own errors.
        }
    }

    void handle(const reply& r) {
        if (r.is_error()) {
            // E.g. NOPERM for a channel the ACL user may not access: the names it refused stop
            // being wanted (resubscribing would only be refused again) and their waiters return.
            std::lock_guard lk(mu);
            (void)book.error(r.text());
            cv.notify_all();
            return;
        }
        if (r.is_status()) {  // +PONG: the reply to a health PING while nothing is subscribed
            std::lock_guard lk(mu);
            book.ponged();
            return;
        }
        if (!r.is_array() || r.elements().empty() || !r.elements()[0].is_string()) return;
        const auto& e = r.elements();
        const std::string& kind = e[0].text();
        if (kind == "message" && e.size() >= 3) {
            deliver(pubsub_message{e[1].text(), {}, e[2].text()});
        } else if (kind == "pmessage" && e.size() >= 4) {
            deliver(pubsub_message{e[2].text(), e[1].text(), e[3].text()});
        } else if (kind == "subscribe" || kind == "psubscribe" || kind == "unsubscribe" || kind == "punsubscribe") {
            if (e.size() < 2 || e[1].is_nil()) return;
            std::lock_guard lk(mu);
            book.confirmed(kind, e[1].text());
            cv.notify_all();
        } else if (kind == "pong") {
            std::lock_guard lk(mu);
            book.ponged();
        }
    }

    static void send(connection::impl& c, const std::vector<std::string>& cmd) {
        std::vector<std::string_view> v(cmd.begin(), cmd.end());
        c.append(v);
    }


    static std::int64_t now_ns() { return clock_type::now().time_since_epoch().count(); }

    // Reads and dispatches what has arrived, if anything. Caller holds read_mu. The read
    // does not wait (another reader may have taken the data first). @throws as
    // connection::impl::read_if_ready.
    bool read_available(connection::impl& c) {
        const bool got = c.read_if_ready([&](reply& r) {
            handle(r);
            return true;
        });
        if (got) last_data_ns.store(now_ns(), std::memory_order_relaxed);
        return got;
    }

    bool help_read() noexcept {
        std::unique_lock rl(read_mu, std::try_to_lock);
        if (!rl.owns_lock() || !current || helper_failed) return false;
        try {
            return read_available(*current);
        } catch (...) {
            // The reader thread owns reconnecting: tell it, and let it throw from its session.
            helper_failed = true;
            wake();
            return false;
        }
    }

    // read_mu for the reader thread's own use of the link, which a helper's failed read has
    // condemned: the throw ends the session, and run() reconnects.
    std::unique_lock<std::mutex> own_link() {
        std::unique_lock g(read_mu);
        if (helper_failed) throw connection_error("subscriber link to " + ep.to_string() + " failed");
        return g;
    }

    static int poll_ms(std::chrono::milliseconds d) {
        return static_cast<int>(std::min<std::chrono::milliseconds::rep>(d.count(), 1 << 30));
    }

    // One connected session; returns when the link fails, a drop is requested, or stopping.
    void session(connection::impl& c) {
        std::unique_lock rl(read_mu);
        {
            std::lock_guard lk(mu);
            outbox.clear();
            drop_requested = false;
            link_up = true;
            ++connect_count;
            for (const auto& cmd : book.relink()) send(c, cmd);
        }
        c.flush();
        current = &c;
        helper_failed = false;
        rl.unlock();
        struct unpublish {
            impl& self;
            ~unpublish() {
                std::lock_guard g(self.read_mu);
                self.current = nullptr;
            }
        } unpublish_on_exit{*this};
        announced_up = false;
        last_data_ns.store(now_ns(), std::memory_order_relaxed);
        auto last_ping = clock_type::now();
        const auto hi = opts.health_interval;
        const int hi_ms = hi.count() > 0 ? static_cast<int>(hi.count()) : 1000;
        // The lazy reader's current drain interval: back to the minimum whenever a drain
        // finds data, doubled up to drain_max when it finds none. A lazy reader that watches
        // looks at the demand again at least every drain_max, so it returns to its drain
        // timer soon after the demand is gone.
        const auto drain_max = opts.drain_interval * 16;
        const int watch_ms = lazy() ? std::min(hi_ms, poll_ms(drain_max)) : hi_ms;
        auto drain = opts.drain_interval;
        while (!stopping.load()) {
            if (!announced_up) {
                bool up;
                {
                    std::lock_guard lk(mu);
                    up = all_confirmed_locked();
                }
                if (up) {
                    announced_up = true;
                    notify_state(true);
                }
            }
            const bool watch = should_watch();
            pollfd fds[2] = {{wake_fd, POLLIN, 0}, {c.ctx->fd, POLLIN, 0}};
            // A lazy reader also wakes for the health check (when enabled).
            const int timeout_ms = watch ? watch_ms : (hi.count() > 0 ? std::min(hi_ms, poll_ms(drain)) : poll_ms(drain));
            int rc = ::poll(fds, watch ? 2 : 1, timeout_ms);
            if (rc < 0 && errno != EINTR) throw connection_error("poll failed");
            if (stopping.load()) return;
            if (fds[0].revents) {
                std::uint64_t v;
                [[maybe_unused]] auto n = ::read(wake_fd, &v, sizeof v);
                std::vector<std::vector<std::string>> cmds;
                {
                    std::lock_guard lk(mu);
                    if (drop_requested) return;
                    for (const auto& [verb, names] : outbox) cmds.push_back(book.sent(verb, names));
                    outbox.clear();
                }
                auto g = own_link();
                for (auto& cmd : cmds) send(c, cmd);
                if (!cmds.empty()) c.flush();
            }
            if (watch && fds[1].revents) {
                std::lock_guard g(read_mu);
                (void)read_available(c);
            } else if (!watch) {
                // A drain: what arrived since the last one, a bounded number of reads so a
                // flood cannot keep read_mu from the helpers.
                auto g = own_link();
                bool got = false;
                for (int i = 0; i < 64 && read_available(c); ++i) got = true;
                drain = got ? opts.drain_interval : std::min(drain * 2, drain_max);
            }
            if (hi.count() > 0) {
                const auto now = clock_type::now();
                const auto last_data = clock_type::time_point(clock_type::duration(last_data_ns.load(std::memory_order_relaxed)));
                if (now - last_data > 3 * hi) throw timeout_error("subscriber link to " + ep.to_string() + " silent");
                if (now - last_ping >= hi && now - last_data >= hi) {
                    std::lock_guard g(read_mu);
                    {
                        std::lock_guard lk(mu);
                        send(c, book.sent("PING", {}));
                    }
                    c.flush();
                    last_ping = now;
                }
            }
        }
    }
    bool announced_up = false;  // reader thread only

    void run() {
        auto backoff = opts.reconnect_min;
        while (!stopping.load()) {
            std::unique_ptr<connection::impl> c;
            std::optional<clock_type::time_point> linked_at;
            try {
                if (resolver) {
                    auto conn = resolver->connect(ep.connect_timeout);
                    c = detail::connection_access::release(conn);
                } else {
                    c = std::make_unique<connection::impl>(ep, ep.connect_timeout);
                }
                // The reader blocks in poll(), never in a socket read: no socket timeout needed.
                linked_at = clock_type::now();
                session(*c);
            } catch (const std::exception&) {
                // With Sentinel, a dropped link may mean a failover: let it resolve again.
                if (resolver && c) resolver->report_failure({c->ep.host, c->ep.port});
            }
            bool was_up;
            {
                std::lock_guard lk(mu);
                was_up = link_up;
                link_up = false;
                cv.notify_all();
            }
            // Only a session that lasted resets the backoff: a link the server (an output
            // buffer limit, a proxy) kills right after subscribing must not be redialled every
            // reconnect_min forever (C5).
            if (linked_at && clock_type::now() - *linked_at >= opts.reconnect_max) backoff = opts.reconnect_min;
            c.reset();
            if (was_up && announced_up) notify_state(false);
            if (stopping.load()) break;
            auto jitter = std::chrono::milliseconds(random_between(0, static_cast<std::uint64_t>(backoff.count() / 2)));
            std::unique_lock lk(mu);
            // Saturated: reconnect_max may be as large as the caller likes.
            cv.wait_until(lk, deadline_after(backoff, deadline_after(jitter)), [&] { return stopping.load(); });
            backoff = backoff >= opts.reconnect_max / 2 ? opts.reconnect_max : backoff * 2;
        }
    }

    bool add(detail::subscription_book::space sp, const char* verb, const std::vector<std::string>& names,
             std::chrono::milliseconds wait) {
        std::unique_lock lk(mu);
        auto fresh = book.want(sp, names);
        if (!fresh.empty() && link_up) {
            outbox.emplace_back(verb, std::move(fresh));
            wake();
        }
        auto done = [&] { return link_up && book.confirmed_all(sp, names); };
        if (wait.count() <= 0) return done();
        // A lazy reader must watch for the confirmation while someone waits for it.
        adjust_demand(1);
        // wait_until on a saturated deadline: wait_for(max) overflows now() + wait (C8).
        cv.wait_until(lk, deadline_after(wait), [&] { return done() || book.refused_any(sp, names); });
        adjust_demand(-1);
        return done();
    }

    void remove(detail::subscription_book::space sp, const char* verb, const std::vector<std::string>& names) {
        std::lock_guard lk(mu);
        auto gone = book.unwant(sp, names);
        if (!gone.empty() && link_up) {
            outbox.emplace_back(verb, std::move(gone));
            wake();
        }
    }
};

subscriber::subscriber(endpoint ep, message_handler on_message, subscriber_options opts, state_handler on_state)
    : impl_(std::make_unique<impl>()) {
    if (!on_message) throw invalid_argument("subscriber needs a message handler");
    if (opts.reconnect_min.count() <= 0 || opts.reconnect_max < opts.reconnect_min)
        throw invalid_argument("subscriber reconnect delays must satisfy 0 < min <= max");
    if (opts.drain_interval.count() < 0) throw invalid_argument("subscriber drain_interval must be >= 0");
    if (ep.is_sentinel()) impl_->resolver = shared_sentinel_resolver(ep);
    impl_->ep = std::move(ep);
    impl_->on_message = std::move(on_message);
    impl_->on_state = std::move(on_state);
    impl_->opts = opts;
    impl_->wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (impl_->wake_fd < 0) throw error("eventfd failed");
    impl_->reader = std::thread([p = impl_.get()] { p->run(); });
    if (impl_->resolver)
        // After a failover the link may still be up to the old master (demoted, or
        // partitioned): move to the new one.
    {
        impl_->hook = std::make_shared<impl::switch_hook>();
        impl_->hook->target = impl_.get();
        impl_->on_switch = impl_->resolver->master_changed.connect([h = impl_->hook](const host_port&, const host_port&) {
            std::lock_guard hl(h->mu);
            if (!h->target) return;
            std::lock_guard lk(h->target->mu);
            h->target->drop_requested = true;
            h->target->wake();
        });
    }
}

subscriber::~subscriber() {
    if (impl_->hook) {
        std::lock_guard hl(impl_->hook->mu);
        impl_->hook->target = nullptr;
    }
    impl_->on_switch.disconnect();
    impl_->stopping.store(true);
    {
        std::lock_guard lk(impl_->mu);
        impl_->cv.notify_all();
    }
    impl_->wake();
    if (impl_->reader.joinable()) impl_->reader.join();
    ::close(impl_->wake_fd);
}

using space = detail::subscription_book::space;

bool subscriber::subscribe(const std::vector<std::string>& channels, std::chrono::milliseconds wait) {
    return impl_->add(space::channel, "SUBSCRIBE", channels, wait);
}

bool subscriber::psubscribe(const std::vector<std::string>& patterns, std::chrono::milliseconds wait) {
    return impl_->add(space::pattern, "PSUBSCRIBE", patterns, wait);
}

void subscriber::unsubscribe(const std::vector<std::string>& channels) {
    impl_->remove(space::channel, "UNSUBSCRIBE", channels);
}

void subscriber::punsubscribe(const std::vector<std::string>& patterns) {
    impl_->remove(space::pattern, "PUNSUBSCRIBE", patterns);
}

bool subscriber::connected() const {
    std::lock_guard lk(impl_->mu);
    return impl_->all_confirmed_locked();
}

std::uint64_t subscriber::connects() const {
    std::lock_guard lk(impl_->mu);
    return impl_->connect_count;
}

std::string subscriber::last_error() const {
    std::lock_guard lk(impl_->mu);
    return impl_->book.last_error();
}

const endpoint& subscriber::where() const noexcept { return impl_->ep; }

bool subscriber::help_read() noexcept { return impl_->help_read(); }

void subscriber::adjust_demand(int delta) noexcept { impl_->adjust_demand(delta); }

void subscriber::drop_link() {
    std::lock_guard lk(impl_->mu);
    impl_->drop_requested = true;
    impl_->wake();
}

}  // namespace redcoord
