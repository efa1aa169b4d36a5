#include "link_reactor.hpp"

#include "cluster_nodes.hpp"
#include "subscriber_refusal.hpp"

#include <redcoord/core/detail/thread_name.hpp>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

namespace redcoord::detail {

using clock_type = std::chrono::steady_clock;
using time_point = clock_type::time_point;

struct link_reactor::core {
    int wake_fd = -1;

    // The timer service whose tick workers run the dials (the runtime's); attach() only.
    timer_service* const timers;

    // The reader's inbox: connections the dials opened, links to look at, links to forget.
    mutex mu;
    bool stopping REDCOORD_GUARDED_BY(mu) = false;
    std::vector<std::pair<std::shared_ptr<subscriber_link>, std::unique_ptr<connection::impl>>>
        arrived REDCOORD_GUARDED_BY(mu);
    std::vector<std::shared_ptr<subscriber_link>> kicked REDCOORD_GUARDED_BY(mu);
    std::vector<std::shared_ptr<subscriber_link>> removed REDCOORD_GUARDED_BY(mu);

    // The dials: each link's own timer (subscriber_link::dial_timer) runs them on a tick worker.
    mutex dial_mu;
    std::condition_variable dial_cv;
    bool dial_stopping REDCOORD_GUARDED_BY(dial_mu) = false;
    int dialing REDCOORD_GUARDED_BY(dial_mu) = 0;  // dials under way (sync())
    std::mt19937_64 dial_random REDCOORD_GUARDED_BY(dial_mu){std::random_device{}()};

    // Reader passes whose inbox was handled and released (sync()).
    std::mutex pass_mu;
    std::condition_variable pass_cv;
    std::uint64_t passes = 0;  // guarded by pass_mu

    // Reader thread only: links with a session, in the order they got it.
    std::vector<std::shared_ptr<subscriber_link>> sessions;
    std::mt19937_64 reader_random{std::random_device{}()};

    explicit core(timer_service& t) : timers(&t) {
        wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (wake_fd < 0) throw error("eventfd failed");
    }
    ~core() { ::close(wake_fd); }
    core(const core&) = delete;
    core& operator=(const core&) = delete;

    void wake() noexcept {
        std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(wake_fd, &one, sizeof one);
    }

    void stop() {
        {
            lock_guard lk(mu);
            stopping = true;
        }
        wake();
        lock_guard lk(dial_mu);
        dial_stopping = true;
        dial_cv.notify_all();
    }

    // Waits (at most until `until`) for the dials under way, whose links may be ones removed
    // meanwhile, then for two reader passes that began after the call, so every removal
    // requested before it has been handled and released.
    void sync(time_point until) {
        {
            unique_lock lk(dial_mu);
            while (dialing > 0 && !dial_stopping)
                if (dial_cv.wait_until(lk.native(), until) == std::cv_status::timeout) return;
        }
        std::unique_lock pl(pass_mu);
        const auto first = passes;
        for (std::uint64_t target = first + 1; target <= first + 2; ++target) {
            pl.unlock();
            wake();
            pl.lock();
            if (!pass_cv.wait_until(pl, until, [&] { return passes >= target; })) return;
        }
    }

    // The next dial of `l` at `due`, unless the reactor stops or its subscriber is gone.
    void schedule_dial(const std::shared_ptr<subscriber_link>& l, time_point due) {
        {
            lock_guard lk(dial_mu);
            if (dial_stopping || l->closed.load()) return;
        }
        try {
            l->dial_timer->arm(timers->clock().from_steady(bounded(due)));
        } catch (...) {
            // No tick worker could start, and none runs (the service starts its first one on
            // attach(), which threw then): nothing can dial.
        }
    }

    // A backoff may end at time_point::max() (saturated: reconnect delays of years), which the
    // timer service's due-time arithmetic must not see: such a link dials again within an hour.
    static time_point bounded(time_point due) {
        return std::min(due, clock_type::now() + std::chrono::hours(1));
    }

    static void forget_dials(const subscriber_link& l) {
        if (l.dial_timer) l.dial_timer->disarm();
    }

    // ---- a dial: a tick of the link's timer, on a tick worker ----

    // Dials `l` once (blocking, within its connect timeout): the time of the next attempt, or
    // nullopt when the reader got the connection or the link is gone. The link is released
    // before the dial counts as done (sync()): a closed one's resolver with it.
    std::optional<time_point> dial_tick(std::shared_ptr<subscriber_link> l) {
        std::uint64_t random = 0;
        {
            lock_guard lk(dial_mu);
            if (dial_stopping || l->closed.load()) return std::nullopt;
            ++dialing;
            random = dial_random();
        }
        const auto next = dial(std::move(l), random);
        {
            lock_guard lk(dial_mu);
            --dialing;
        }
        dial_cv.notify_all();
        return next;
    }

    std::optional<time_point> dial(std::shared_ptr<subscriber_link> l, std::uint64_t random) {
        if (l->closed.load()) return std::nullopt;
        std::unique_ptr<connection::impl> c;
        try {
            if (l->resolver) {
                auto conn = l->resolver->connect(l->ep.connect_timeout);
                c = connection_access::release(conn);
            } else if (l->ep.is_cluster()) {
                auto conn = open_cluster_node(l->ep, l->ep.connect_timeout);
                c = connection_access::release(conn);
            } else {
                c = std::make_unique<connection::impl>(l->ep, l->ep.connect_timeout);
            }
        } catch (const permission_error& e) {
            note_dial_refusal(*l, e);  // retried all the same: the user may be fixed
        } catch (...) {
            // Retried after the link's backoff (the resolver notes its own failures).
        }
        if (l->closed.load()) return std::nullopt;  // its subscriber is gone: drop the connection
        if (!c) {
            lock_guard lk(l->mu);
            return bounded(l->policy.retry_at(clock_type::now(), random));
        }
        {
            lock_guard lk(mu);
            arrived.emplace_back(std::move(l), std::move(c));
        }
        wake();
        return std::nullopt;
    }

    // ---- reader thread ----

    enum class ending {
        failure,
        dropped,
        removed
    };

    void start_session(const std::shared_ptr<subscriber_link>& l,
                       std::unique_ptr<connection::impl> c) {
        if (l->closed.load()) return;
        auto& s = l->session;
        const auto now = clock_type::now();
        s = {};
        s.active = true;
        s.fd = c->ctx->fd;
        sessions.push_back(l);
        l->last_data_ns.store(now.time_since_epoch().count(), std::memory_order_relaxed);
        l->watching.store(true);
        try {
            lock_guard rl(l->read_mu);
            l->conn = std::move(c);
            l->helper_failed = false;
            std::vector<std::vector<std::string>> cmds;
            {
                lock_guard lk(l->mu);
                l->outbox.clear();  // relink() subscribes everything wanted
                l->drop_requested = false;
                l->link_up = true;
                ++l->connect_count;
                l->policy.linked(now);
                cmds = l->book.relink();
            }
            for (const auto& cmd : cmds) l->append(cmd);
            s.want_write = !l->flush_some();
        } catch (...) {
            end_session(l, ending::failure);
        }
    }

    void end_session(const std::shared_ptr<subscriber_link>& l, ending why) {
        auto& s = l->session;
        if (!s.active) return;
        s.active = false;
        std::erase(sessions, l);
        std::unique_ptr<connection::impl> dead;
        {
            lock_guard rl(l->read_mu);
            dead = std::move(l->conn);
            l->helper_failed = false;
        }
        std::optional<host_port> where;
        if (dead) where = host_port{dead->ep.host, dead->ep.port};
        dead.reset();
        const auto now = clock_type::now();
        bool was_up;
        time_point due;
        {
            lock_guard lk(l->mu);
            was_up = l->link_up;
            l->link_up = false;
            l->cv.notify_all();
            due = l->policy.retry_at(now, reader_random());
        }
        // With Sentinel, a failed link may mean a failover: let the resolver look again.
        if (why == ending::failure && l->resolver && where) l->resolver->report_failure(*where);
        if (was_up && s.announced_up && why != ending::removed) {
            lock_guard rl(l->read_mu);
            l->notify_state(false);
        }
        if (why != ending::removed) schedule_dial(l, due);
    }

    // A kicked link: a drop request, a failed helper read, commands to send.
    void service(const std::shared_ptr<subscriber_link>& l) {
        if (!l->session.active) return;
        std::optional<ending> end;
        {
            lock_guard rl(l->read_mu);
            if (!l->conn || l->helper_failed) {
                end = ending::failure;
            } else {
                std::vector<std::vector<std::string>> cmds;
                {
                    lock_guard lk(l->mu);
                    if (l->drop_requested) {
                        end = ending::dropped;
                    } else {
                        for (const auto& [verb, names] : l->outbox)
                            cmds.push_back(l->book.sent(verb, names));
                        l->outbox.clear();
                    }
                }
                if (!end && !cmds.empty()) {
                    try {
                        for (const auto& cmd : cmds) l->append(cmd);
                        l->session.want_write = !l->flush_some();
                    } catch (...) {
                        end = ending::failure;
                    }
                }
            }
        }
        if (end) end_session(l, *end);
    }

    // Whether poll() should watch the link's socket now (always, unless read on demand).
    static bool should_watch(subscriber_link& l) {
        if (!l.lazy()) return true;
        l.watching.store(false);
        bool want = l.demand.load() > 0;
        if (!want) {
            // Confirmations of a (re)subscription are read promptly so connected() and the
            // state handler follow the link without waiting for a drain.
            lock_guard lk(l.mu);
            want = !l.all_confirmed();
        }
        if (want) l.watching.store(true);
        return want;
    }

    // Timers and state of one session at `now`; returns when to look again (nullopt: only
    // on an event). May end the session.
    std::optional<time_point> tick(const std::shared_ptr<subscriber_link>& l, time_point now) {
        auto& s = l->session;
        if (!s.announced_up) {
            bool up;
            {
                lock_guard lk(l->mu);
                up = l->all_confirmed();
            }
            if (up) {
                s.announced_up = true;
                lock_guard rl(l->read_mu);
                l->notify_state(true);
            }
        }
        link_policy::health h;
        {
            lock_guard lk(l->mu);
            l->policy.heard(
                time_point(clock_type::duration(l->last_data_ns.load(std::memory_order_relaxed))));
            h = l->policy.check(now);
        }
        if (h == link_policy::health::silent) {
            end_session(l, ending::failure);
            return std::nullopt;
        }
        std::optional<ending> end;
        const bool watch = should_watch(*l);
        {
            lock_guard rl(l->read_mu);
            try {
                if (!l->conn || l->helper_failed) {
                    end = ending::failure;
                } else {
                    if (h == link_policy::health::ping) {
                        {
                            lock_guard lk(l->mu);
                            l->append(l->book.sent("PING", {}));
                            l->policy.pinged(now);
                        }
                        s.want_write = !l->flush_some();
                    }
                    if (l->lazy() && !watch) {
                        bool due;
                        {
                            lock_guard lk(l->mu);
                            if (s.watched) l->policy.unwatched(now);
                            due = now >= l->policy.next_drain();
                        }
                        if (due) {
                            // A drain: what arrived since the last one, a bounded number of
                            // reads so a flood cannot keep the other links waiting.
                            bool got = false;
                            for (int i = 0; i < 64 && l->read_available(); ++i) got = true;
                            lock_guard lk(l->mu);
                            l->policy.drained(now, got);
                        }
                    }
                }
            } catch (...) {
                end = ending::failure;
            }
        }
        s.watched = watch;
        if (end) {
            end_session(l, *end);
            return std::nullopt;
        }
        lock_guard lk(l->mu);
        return l->policy.next_due(now, watch);
    }

    // poll() reported the link's socket ready.
    void on_ready(const std::shared_ptr<subscriber_link>& l, short revents) {
        if (!l->session.active) return;
        bool failed = false;
        {
            lock_guard rl(l->read_mu);
            try {
                if (!l->conn || l->helper_failed) {
                    failed = true;
                } else {
                    if (revents & POLLOUT) l->session.want_write = !l->flush_some();
                    if (revents & (POLLIN | POLLHUP | POLLERR)) {
                        // Level-triggered: what a few reads leave is reported again, after the
                        // other links had their turn.
                        for (int i = 0; i < 8 && l->read_available(); ++i) {}
                        // A hang-up with nothing left to read (a helper took it) still ends it.
                        if ((revents & (POLLHUP | POLLERR)) && !(revents & POLLIN)) failed = true;
                    }
                }
            } catch (...) {
                failed = true;
            }
        }
        if (failed) end_session(l, ending::failure);
    }

    void run_reader() {
        std::vector<pollfd> fds;
        std::vector<std::shared_ptr<subscriber_link>> polled;
        for (;;) {
            std::uint64_t v;
            [[maybe_unused]] auto n = ::read(wake_fd, &v, sizeof v);
            decltype(arrived) got;
            decltype(kicked) kicks;
            decltype(removed) gone;
            bool stop;
            {
                lock_guard lk(mu);
                got.swap(arrived);
                kicks.swap(kicked);
                gone.swap(removed);
                stop = stopping;
            }
            for (auto& l : gone) end_session(l, ending::removed);
            if (stop) {
                for (auto snapshot = sessions; auto& l : snapshot) end_session(l, ending::removed);
                return;
            }
            for (auto& [l, c] : got) start_session(l, std::move(c));
            for (auto& l : kicks) {
                l->kick_queued.store(false);
                service(l);
            }
            // Released now, not when poll() next returns (it may wait for good): a removed link
            // may hold a Sentinel resolver, its pools and their threads.
            gone.clear();
            got.clear();
            kicks.clear();
            {
                std::lock_guard pl(pass_mu);
                ++passes;
            }
            pass_cv.notify_all();

            const auto now = clock_type::now();
            std::optional<time_point> due;
            fds.assign(1, pollfd{wake_fd, POLLIN, 0});
            polled.clear();
            for (auto snapshot = sessions; auto& l : snapshot) {
                const auto next = tick(l, now);
                if (!l->session.active) continue;
                if (next) due = due ? std::min(*due, *next) : *next;
                const short events = static_cast<short>((l->session.watched ? POLLIN : 0) |
                                                        (l->session.want_write ? POLLOUT : 0));
                if (!events) continue;
                fds.push_back(pollfd{l->session.fd, events, 0});
                polled.push_back(l);
            }
            int timeout_ms = -1;
            if (due) {
                const auto left =
                    std::chrono::ceil<std::chrono::milliseconds>(*due - clock_type::now()).count();
                timeout_ms = static_cast<int>(std::clamp<std::int64_t>(left, 0, INT_MAX));
            }
            const int rc = ::poll(fds.data(), fds.size(), timeout_ms);
            if (rc <= 0) continue;  // a timer is due, or EINTR
            for (std::size_t i = 1; i < fds.size(); ++i)
                if (fds[i].revents) on_ready(polled[i - 1], fds[i].revents);
        }
    }
};

namespace {

// At exit (a static destructor), the reactors still running get their pending removals handled
// before the process ends: a subscriber destroyed just before main returned hands its link to
// the reader, and that link may hold a Sentinel resolver whose pools' threads must be joined,
// not cut off half way. The wait is bounded (per reactor); if this ends up holding a reactor's
// last reference, its threads are joined here. Only this exit step knows every runtime's
// reactor; nothing else is shared between runtimes.
struct exit_sync {
    std::mutex m;
    std::vector<std::weak_ptr<link_reactor>> live;  // guarded by m
    ~exit_sync() {
        std::vector<std::shared_ptr<link_reactor>> running;
        {
            std::lock_guard lk(m);
            for (auto& w : live)
                if (auto r = w.lock()) running.push_back(std::move(r));
        }
        for (auto& r : running) r->sync(std::chrono::seconds(2));
    }
};

exit_sync& at_exit() {
    static exit_sync sync;
    return sync;
}

}  // namespace

void link_reactor::sync(std::chrono::milliseconds bound) { core_->sync(clock_type::now() + bound); }

std::shared_ptr<link_reactor> link_reactor::create(timer_service& timers) {
    auto r = std::make_shared<link_reactor>(timers);
    auto& e = at_exit();
    std::lock_guard lk(e.m);
    std::erase_if(e.live, [](const auto& w) { return w.expired(); });
    e.live.push_back(r);
    return r;
}

link_reactor::link_reactor(timer_service& timers) : core_(std::make_shared<core>(timers)) {
    reader_ = std::thread([c = core_] {
        name_this_thread("rc-pubsub-read");
        c->run_reader();
    });
}

link_reactor::~link_reactor() {
    core_->stop();
    // The thread holds the core: the reader destroying the last subscriber lets itself end.
    if (reader_.get_id() == std::this_thread::get_id())
        reader_.detach();
    else
        reader_.join();
}

void link_reactor::attach(const std::shared_ptr<subscriber_link>& l) {
    // Weak both ways: the link owns its timer, and the reactor must not outlive its holders.
    l->dial_timer = std::make_unique<timer>(
        *core_->timers,
        [weak_core = std::weak_ptr<core>(core_),
         weak_link = std::weak_ptr<subscriber_link>(l)]() -> std::optional<time_point> {
            auto c = weak_core.lock();
            auto link = weak_link.lock();
            if (!c || !link) return std::nullopt;
            // The dials' back-off is I/O timing, on the steady clock; the timer service's due
            // times are on the runtime's clock.
            const auto next = c->dial_tick(std::move(link));
            if (!next) return next;
            return c->timers->clock().from_steady(*next);
        });
    l->dial_timer->arm(core_->timers->clock().now());  // @throws std::system_error: no tick worker
}

void link_reactor::detach(const std::shared_ptr<subscriber_link>& l) {
    core_->forget_dials(*l);
    {
        lock_guard lk(core_->mu);
        core_->removed.push_back(l);
    }
    core_->wake();
}

void link_reactor::kick(subscriber_link& l) {
    if (!l.kick_queued.exchange(true)) {
        lock_guard lk(core_->mu);
        core_->kicked.push_back(l.shared_from_this());
    }
    core_->wake();
}

void link_reactor::wake() noexcept { core_->wake(); }

}  // namespace redcoord::detail
