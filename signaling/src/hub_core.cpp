#include "hub_core.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/token.hpp>

#include <algorithm>

namespace redcoord::detail {

using namespace std::chrono_literals;

hub_core::hub_core(connection_pool& p, signal_options o)
    : pool(p), opts(std::move(o)), origin(random_u64()), seen(opts.dedup_window == 0 ? 1 : opts.dedup_window) {
    if (opts.dedup_window == 0) throw invalid_argument("signal_options::dedup_window must be >= 1");
    if (opts.subscribe_timeout.count() <= 0) throw invalid_argument("signal_options::subscribe_timeout must be > 0");
    unicast_root = opts.prefix + "unicast:{";
}

hub_core::~hub_core() { shutdown(); }

std::shared_ptr<subscriber> hub_core::make_link(const endpoint& ep, bool is_master) {
    // The links die in shutdown(), before this object, so the raw `this` never dangles.
    subscriber::state_handler on_state;
    if (is_master) on_state = [this](bool up) { master_up.store(up); };
    return std::make_shared<subscriber>(ep, [this](const pubsub_message& m) { on_message(m); }, opts.link,
                                        std::move(on_state));
}

std::string hub_core::next_envelope() { return envelope_header(origin, seq.fetch_add(1) + 1); }

void hub_core::on_message(const pubsub_message& m) {
    redcoord::signal s;
    const auto env = open_envelope(m.payload);
    std::lock_guard lk(mu);
    if (closed) return;
    ++counters.received;
    if (env) {
        if (!seen.first_copy(env->id, m.channel, m.pattern)) {
            ++counters.duplicates;
            return;
        }
        s.payload.assign(env->payload);
    } else {
        ++counters.plain;
        s.plain = true;
        s.payload = m.payload;
    }
    s.channel = m.channel;
    s.pattern = m.pattern;
    const bool pattern = !m.pattern.empty();
    const std::string& key = pattern ? m.pattern : m.channel;
    auto& routes = pattern ? by_pattern : by_channel;
    if (auto it = routes.find(key); it != routes.end()) {
        for (auto& st : it->second) {
            auto& pushed = st->queue.emplace_back(s);
            if (!st->unicast_channel.empty()) pushed.channel = st->unicast_channel;
            st->queued.store(st->queue.size(), std::memory_order_release);
            st->cv.notify_one();
        }
    }
    auto& slots = pattern ? slots_pattern : slots_channel;
    if (auto it = slots.find(key); it != slots.end() && !it->second->empty()) {
        cb_queue.emplace_back(it->second, std::move(s));
        cb_cv.notify_one();
    }
}

void hub_core::callback_loop() {
    std::unique_lock lk(mu);
    for (;;) {
        cb_cv.wait(lk, [&] { return closed || !cb_queue.empty(); });
        if (closed) return;
        auto item = std::move(cb_queue.front());
        cb_queue.pop_front();
        lk.unlock();
        try {
            (*item.first)(item.second);  // every slot wrapper catches its own exceptions
        } catch (...) {
        }
        item.first.reset();
        lk.lock();
    }
}

void hub_core::shutdown() noexcept {
    {
        std::lock_guard lk(mu);
        if (closed) return;
        closed = true;
        for (auto* routes : {&by_channel, &by_pattern})
            for (auto& [name, states] : *routes)
                for (auto& st : states) st->cv.notify_all();
        cb_cv.notify_all();
    }
    if (cb_thread.joinable()) {
        if (cb_thread.get_id() == std::this_thread::get_id())
            cb_thread.detach();  // a slot destroyed the hub (documented as unsupported); do not self-join
        else
            cb_thread.join();
    }
    std::vector<std::shared_ptr<subscriber>> old;
    {
        std::lock_guard lk(sub_mu);
        old.swap(links);
    }
    old.clear();  // joins the readers; on_message() sees `closed`
    decltype(slots_channel) sc, sp;
    decltype(cb_queue) q;
    {
        std::lock_guard lk(mu);
        sc.swap(slots_channel);
        sp.swap(slots_pattern);
        q.swap(cb_queue);
    }
    // Destroyed here, outside the locks: slot guards call unref(), which sees `closed`.
}

void hub_core::ref(const std::vector<std::string>& names, bool pattern) {
    std::lock_guard lk(sub_mu);
    auto& refs = pattern ? pattern_refs : channel_refs;
    std::vector<std::string> fresh;
    for (auto& n : names)
        if (refs[n]++ == 0) fresh.push_back(n);
    if (fresh.empty()) return;
    for (auto& l : links) {
        if (pattern)
            (void)l->psubscribe(fresh, 0ms);
        else
            (void)l->subscribe(fresh, 0ms);
    }
}

void hub_core::unref(const std::vector<std::string>& names, bool pattern) noexcept {
    try {
        std::lock_guard lk(sub_mu);
        auto& refs = pattern ? pattern_refs : channel_refs;
        std::vector<std::string> gone;
        for (auto& n : names) {
            auto it = refs.find(n);
            if (it == refs.end()) continue;
            if (--it->second <= 0) {
                refs.erase(it);
                gone.push_back(n);
            }
        }
        if (gone.empty()) return;
        for (auto& l : links) {
            if (pattern)
                l->punsubscribe(gone);
            else
                l->unsubscribe(gone);
        }
    } catch (...) {
        // Out of memory at worst; the subscription then stays, which only costs traffic.
    }
}

void hub_core::await_confirmed(const std::vector<std::string>& names, bool pattern, bool master_first) {
    std::vector<std::shared_ptr<subscriber>> ls;
    {
        std::lock_guard lk(sub_mu);
        ls = links;
    }
    if (ls.empty()) throw connection_error("signal_hub is shut down");
    auto confirm = [&](subscriber& l, std::chrono::milliseconds w) {
        return pattern ? l.psubscribe(names, w) : l.subscribe(names, w);
    };
    const auto deadline = deadline_after(opts.subscribe_timeout);
    for (;;) {
        const auto left = time_left(deadline);
        // The master usually confirms within one round trip; poll the replicas between
        // short waits on it so a reconnecting master link does not stall the caller. A unicast
        // waiter is a candidate only once the master has its channel (the unicast script lists
        // the master's channels), so for it a replica counts only while the master link is down.
        if (confirm(*ls[0], std::clamp(left, 1ms, 20ms))) return;
        if (!master_first || !master_up.load())
            for (std::size_t i = 1; i < ls.size(); ++i)
                if (confirm(*ls[i], 0ms)) return;
        if (std::chrono::steady_clock::now() >= deadline)
            throw connection_error("signal_hub: no pub/sub link (master or replica) confirmed the subscription within " +
                                   std::to_string(opts.subscribe_timeout.count()) + " ms");
    }
}

std::vector<std::shared_ptr<subscriber>> hub_core::current_links() {
    std::lock_guard lk(sub_mu);
    return links;
}

void hub_core::read_links(const std::vector<std::shared_ptr<subscriber>>& ls) noexcept {
    // Every link, not just until the first hit: the other copies of the same signals are
    // consumed in step, so they meet their ids inside the dedup window.
    for (auto& l : ls) (void)detail::subscriber_access::help_read(*l);
}

void hub_core::watch_links() {
    std::lock_guard lk(sub_mu);
    if (links_watched) return;
    links_watched = true;
    for (auto& l : links) detail::subscriber_access::adjust_demand(*l, 1);
}

void hub_core::sweep_slots_locked() {
    for (auto* slots : {&slots_channel, &slots_pattern})
        for (auto it = slots->begin(); it != slots->end();) it = it->second->empty() ? slots->erase(it) : std::next(it);
}

std::shared_ptr<void> hold_channel(const signal_hub& hub, const std::string& channel) {
    struct held {
        std::weak_ptr<hub_core> core;
        std::vector<std::string> names;
        ~held() {
            if (auto c = core.lock()) c->unref(names, false);
        }
    };
    const auto& core = hub_access::core(hub);
    auto h = std::make_shared<held>();
    h->names = {channel};
    core->ref(h->names, false);
    h->core = core;  // from here on the destructor drops the reference
    return h;
}

void hub_core::register_waiter(const std::shared_ptr<waiter_state>& st) {
    {
        std::lock_guard lk(mu);
        auto& routes = st->pattern ? by_pattern : by_channel;
        for (auto& n : st->names) routes[n].push_back(st);
        st->registered = true;
    }
    try {
        ref(st->names, st->pattern);
    } catch (...) {
        std::lock_guard lk(mu);
        auto& routes = st->pattern ? by_pattern : by_channel;
        for (auto& n : st->names) {
            auto& v = routes[n];
            v.erase(std::remove(v.begin(), v.end(), st), v.end());
            if (v.empty()) routes.erase(n);
        }
        st->registered = false;
        throw;
    }
}

void hub_core::unregister_waiter(const std::shared_ptr<waiter_state>& st) noexcept {
    {
        std::lock_guard lk(mu);
        if (!st->registered) return;
        st->registered = false;
        auto& routes = st->pattern ? by_pattern : by_channel;
        for (auto& n : st->names) {
            auto it = routes.find(n);
            if (it == routes.end()) continue;
            auto& v = it->second;
            v.erase(std::remove(v.begin(), v.end(), st), v.end());
            if (v.empty()) routes.erase(it);
        }
    }
    unref(st->names, st->pattern);
}

}  // namespace redcoord::detail
