// The subscriber facade: validation, the caller-facing waits, and the hand-offs to the
// process's link reactor (link_reactor.hpp), which does all I/O.

#include "link_reactor.hpp"
#include "runtime_services.hpp"
#include "subscriber_link.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/subscriber_access.hpp>
#include <redcoord/core/subscriber.hpp>

#include <boost/signals2.hpp>

#include <mutex>

namespace redcoord {

using detail::lock_guard;
using detail::subscriber_link;
using detail::unique_lock;

struct subscriber::impl {
    // Before the reactor and link: released after them.
    std::shared_ptr<runtime> rt;
    std::shared_ptr<detail::link_reactor> reactor;
    std::shared_ptr<subscriber_link> link;
    boost::signals2::scoped_connection on_switch;
    // The failover slot runs on a resolver thread; it reaches this impl only through the hook,
    // which the destructor clears first (a disconnect does not wait for a running slot).
    struct switch_hook {
        std::mutex mu;
        impl* target = nullptr;
    };
    std::shared_ptr<switch_hook> hook;

    void adjust_demand(int delta) noexcept {
        if (delta > 0) {
            if (link->demand.fetch_add(delta) <= 0 && !link->watching.load()) reactor->wake();
        } else if (delta < 0) {
            link->demand.fetch_sub(-delta);
        }
    }

    bool help_read() noexcept {
        bool failed = false;
        const bool got = link->help_read(failed);
        if (failed) {
            try {
                reactor->kick(*link);
            } catch (...) {
                reactor->wake();  // the reader finds the failure on its next look at the link
            }
        }
        return got;
    }

    void request_drop() {
        {
            lock_guard lk(link->mu);
            link->drop_requested = true;
        }
        reactor->kick(*link);
    }

    bool add(detail::subscription_book::space sp, const char* verb,
             const std::vector<std::string>& names, std::chrono::milliseconds wait) {
        auto& l = *link;
        bool send = false;
        {
            lock_guard lk(l.mu);
            auto fresh = l.book.want(sp, names);
            if (!fresh.empty() && l.link_up) {
                l.outbox.emplace_back(verb, std::move(fresh));
                send = true;
            }
        }
        if (send) reactor->kick(l);
        unique_lock lk(l.mu);
        auto done = [&] {
            l.mu.assert_held();
            return l.link_up && l.book.confirmed_all(sp, names);
        };
        if (wait.count() <= 0) return done();
        // A link read on demand must watch for the confirmation while someone waits for it.
        adjust_demand(1);
        // wait_until on a saturated deadline: wait_for(max) overflows now() + wait.
        l.cv.wait_until(lk.native(), deadline_after(wait), [&] {
            l.mu.assert_held();
            return done() || l.book.refused_any(sp, names);
        });
        adjust_demand(-1);
        return done();
    }

    void remove(detail::subscription_book::space sp, const char* verb,
                const std::vector<std::string>& names) {
        auto& l = *link;
        bool send = false;
        {
            lock_guard lk(l.mu);
            auto gone = l.book.unwant(sp, names);
            if (!gone.empty() && l.link_up) {
                l.outbox.emplace_back(verb, std::move(gone));
                send = true;
            }
        }
        if (send) reactor->kick(l);
    }
};

subscriber::subscriber(endpoint ep, message_handler on_message, subscriber_options opts,
                       state_handler on_state)
    : impl_(std::make_unique<impl>()) {
    if (!on_message) throw invalid_argument("subscriber needs a message handler");
    if (opts.reconnect_min.count() <= 0 || opts.reconnect_max < opts.reconnect_min)
        throw invalid_argument("subscriber reconnect delays must satisfy 0 < min <= max");
    if (opts.tuning.drain_interval.count() < 0)
        throw invalid_argument("subscriber drain_interval must be >= 0");
    impl_->rt = opts.runtime ? opts.runtime : detail::runtime_services::default_runtime();
    const detail::runtime_services services(*impl_->rt);
    auto resolver = ep.is_sentinel() ? services.sentinel(ep).source : nullptr;
    impl_->link =
        std::make_shared<subscriber_link>(std::move(ep), std::move(on_message), std::move(opts),
                                          std::move(on_state), std::move(resolver));
    impl_->reactor = services.reactor();
    impl_->reactor->attach(impl_->link);
    if (impl_->link->resolver) {
        // After a failover the link may still be up to the old master (demoted, or
        // partitioned): move to the new one.
        impl_->hook = std::make_shared<impl::switch_hook>();
        impl_->hook->target = impl_.get();
        impl_->on_switch = impl_->link->resolver->on_master_changed(
            [h = impl_->hook](const host_port&, const host_port&) {
                std::lock_guard hl(h->mu);
                if (h->target) h->target->request_drop();
            });
    }
}

subscriber::~subscriber() {
    if (impl_->hook) {
        std::lock_guard hl(impl_->hook->mu);
        impl_->hook->target = nullptr;
    }
    impl_->on_switch.disconnect();
    auto& l = *impl_->link;
    l.closed.store(true);
    {
        lock_guard lk(l.mu);
        l.cv.notify_all();
    }
    message_handler on_message;
    state_handler on_state;
    if (!l.in_own_handler()) {
        // Waits for a handler running on another thread; later ones see `closed`. The
        // handlers are destroyed here, not on the reactor's threads.
        lock_guard rl(l.read_mu);
        on_message.swap(l.on_message);
        on_state.swap(l.on_state);
    }
    try {
        impl_->reactor->detach(impl_->link);
    } catch (...) {
        // Out of memory queueing the removal: the reader drops the closed link's session
        // when it next fails; nothing of it runs meanwhile.
    }
    impl_->link.reset();
    impl_->reactor.reset();  // the last subscriber stops the shared threads
}

using space = detail::subscription_book::space;

bool subscriber::subscribe(const std::vector<std::string>& channels,
                           std::chrono::milliseconds wait) {
    return impl_->add(space::channel, impl_->link->opts.sharded ? "SSUBSCRIBE" : "SUBSCRIBE",
                      channels, wait);
}

bool subscriber::psubscribe(const std::vector<std::string>& patterns,
                            std::chrono::milliseconds wait) {
    if (impl_->link->opts.sharded)
        throw invalid_argument("a sharded subscriber has no patterns (sharded pub/sub has none)");
    return impl_->add(space::pattern, "PSUBSCRIBE", patterns, wait);
}

void subscriber::unsubscribe(const std::vector<std::string>& channels) {
    impl_->remove(space::channel, impl_->link->opts.sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE",
                  channels);
}

void subscriber::punsubscribe(const std::vector<std::string>& patterns) {
    if (impl_->link->opts.sharded) return;  // none subscribed
    impl_->remove(space::pattern, "PUNSUBSCRIBE", patterns);
}

bool subscriber::connected() const {
    lock_guard lk(impl_->link->mu);
    return impl_->link->all_confirmed();
}

std::uint64_t subscriber::connects() const {
    lock_guard lk(impl_->link->mu);
    return impl_->link->connect_count;
}

std::string subscriber::last_error() const {
    lock_guard lk(impl_->link->mu);
    return impl_->link->book.last_error();
}

const endpoint& subscriber::where() const noexcept { return impl_->link->ep; }

void subscriber::drop_link() { impl_->request_drop(); }

namespace detail {

bool subscriber_access::help_read(subscriber& s) noexcept { return s.impl_->help_read(); }

void subscriber_access::adjust_demand(subscriber& s, int delta) noexcept {
    s.impl_->adjust_demand(delta);
}

std::optional<std::string> subscriber_access::refusal(const subscriber& s, bool pattern,
                                                      const std::string& name) {
    lock_guard lk(s.impl_->link->mu);
    return s.impl_->link->book.refusal(
        pattern ? subscription_book::space::pattern : subscription_book::space::channel, name);
}

}  // namespace detail
}  // namespace redcoord
