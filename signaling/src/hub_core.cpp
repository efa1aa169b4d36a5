#include "hub_core.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/token.hpp>

#include <redcoord/core/detail/bytes.hpp>

#include <algorithm>
#include <fstream>

namespace redcoord::detail {

using namespace std::chrono_literals;

namespace {

bool same_link_options(const subscriber_options& a, const subscriber_options& b) {
    return a.reconnect_min == b.reconnect_min && a.reconnect_max == b.reconnect_max &&
           a.health_interval == b.health_interval &&
           a.tuning.drain_interval == b.tuning.drain_interval;
}

const signal_options& checked(const signal_options& o) {
    if (o.dedup_window == 0) throw invalid_argument("signal_options::dedup_window must be >= 1");
    if (o.subscribe_timeout.count() <= 0)
        throw invalid_argument("signal_options::subscribe_timeout must be > 0");
    if (o.max_payload == 0 || o.max_payload > max_payload_ceiling)
        throw invalid_argument("signal_options::max_payload must be in 1.." +
                               std::to_string(max_payload_ceiling) + " bytes, not " +
                               std::to_string(o.max_payload));
    return o;
}

// 24 bits naming this host and boot: CLOCK_MONOTONIC (steady_clock) is shared by the
// processes of one host only, and restarts at boot, so it is the boot id that says whether a
// sender's steady time compares with ours. Zero when the kernel does not say (no delivery
// time is then observed: zero never matches, see on_message).
std::uint64_t host_boot_tag() {
    static const std::uint64_t tag = [] {
        std::ifstream in("/proc/sys/kernel/random/boot_id");
        std::string id;
        if (!(in >> id) || id.empty()) return std::uint64_t{0};
        std::uint64_t h = 1469598103934665603ULL;
        for (unsigned char c : id) h = (h ^ c) * 1099511628211ULL;
        return (h >> 40) | 1;  // never zero
    }();
    return tag;
}

constexpr int origin_random_bits = 40;

std::uint64_t steady_ns() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
}

}  // namespace

hub_core::hub_core(connection_pool& p, signal_options o)
    : pool(p), opts(checked(o)),
      origin((host_boot_tag() << origin_random_bits) | (random_u64() >> (64 - origin_random_bits))),
      rt(p.runtime()),
      // The runtime's link per endpoint unless this hub asked for other link settings: a
      // shared link cannot reconnect on one user's schedule.
      mux(same_link_options(opts.link, subscriber_options{})
              ? rt->pubsub(p.where())
              : std::make_shared<pubsub_mux>(p.where(), rt, pubsub_mux_options{.link = opts.link})),
      seen(opts.dedup_window), callbacks(rt->callbacks()) {
    unicast_root = opts.prefix + "unicast:{";
    const metrics_scope ms(*rt);
    delivery = ms.histogram(metric::signal_delivery_seconds, {});
}

hub_core::~hub_core() { shutdown(); }

std::string hub_core::next_envelope() {
    const auto now = steady_ns();
    auto prev = seq.load(std::memory_order_relaxed);
    std::uint64_t next = 0;
    do {
        next = std::max(prev + 1, now);
    } while (!seq.compare_exchange_weak(prev, next, std::memory_order_relaxed));
    return envelope_header(origin, next);
}

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
        if (delivery && (get_be<8>(env->id, 0) >> origin_random_bits) == host_boot_tag()) {
            // Sent by a hub of this host and boot: its seq is its steady send time. An
            // envelope of an older redcoord (a small counter) gives an absurd age: skipped.
            const auto sent = get_be<8>(env->id, 8), now = steady_ns();
            if (sent <= now && now - sent < 3600ULL * 1000000000ULL)
                delivery.observe(static_cast<double>(now - sent) * 1e-9);
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
            for (auto& [id, wake] : st->wakers) wake();
        }
    }
    auto& slots = pattern ? slots_pattern : slots_channel;
    if (auto it = slots.find(key); it != slots.end() && !it->second->empty()) {
        // Posted under `mu`, so the strand's order is the arrival order whichever thread
        // read the link. Every slot wrapper catches its own exceptions.
        callbacks.post([sig = it->second, s = std::move(s)] { (*sig)(s); });
    }
}

void hub_core::shutdown() noexcept {
    {
        std::lock_guard lk(mu);
        if (closed) return;
        closed = true;
        for (auto* routes : {&by_channel, &by_pattern})
            for (auto& [name, states] : *routes)
                for (auto& st : states) {
                    st->cv.notify_all();
                    for (auto& [id, wake] : st->wakers) wake();
                }
    }
    // Drops queued slot runs and waits for a running one (not when a slot destroys the hub,
    // which is documented as unsupported: then it only stops further runs).
    callbacks.close();
    std::map<std::string, interest> chans, pats;
    bool watched = false;
    {
        std::lock_guard lk(sub_mu);
        sub_closed = true;
        chans.swap(channel_refs);
        pats.swap(pattern_refs);
        watched = std::exchange(link_watched, false);
    }
    // Outside the locks: resetting a listener waits for its running handler, which takes mu.
    chans.clear();
    pats.clear();
    if (auto* l = watched ? mux->readable_link() : nullptr)
        subscriber_access::adjust_demand(*l, -1);
    decltype(slots_channel) sc, sp;
    {
        std::lock_guard lk(mu);
        sc.swap(slots_channel);
        sp.swap(slots_pattern);
    }
    // Destroyed here, outside the locks: slot guards call unref(), which finds nothing.
}

void hub_core::ref(const std::vector<std::string>& names, bool pattern) {
    std::size_t done = 0;
    try {
        ref_each(names, pattern, done);
    } catch (...) {
        // All or nothing: the references taken before the failure are dropped again.
        unref({names.begin(), names.begin() + static_cast<std::ptrdiff_t>(done)}, pattern);
        throw;
    }
}

void hub_core::ref_each(const std::vector<std::string>& names, bool pattern, std::size_t& done) {
    std::lock_guard lk(sub_mu);
    if (sub_closed) throw error("signal_hub is shut down");
    auto& refs = pattern ? pattern_refs : channel_refs;
    for (auto& n : names) {
        ++done;
        auto& in = refs[n];
        if (in.refs++ > 0) continue;
        // The hub's only handler for this name; a raw `this` is safe because shutdown()
        // resets every listener (waiting for a running handler) before the core goes.
        pubsub_mux::handlers h{[this](const pubsub_message& m) { on_message(m); }, {}};
        try {
            in.listener = std::make_shared<pubsub_mux::listener>(
                pattern ? mux->listen_pattern(n, std::move(h)) : mux->listen(n, std::move(h)));
        } catch (...) {
            refs.erase(n);
            throw;
        }
    }
}

void hub_core::unref(const std::vector<std::string>& names, bool pattern) noexcept {
    std::vector<std::shared_ptr<pubsub_mux::listener>> gone;
    try {
        std::lock_guard lk(sub_mu);
        auto& refs = pattern ? pattern_refs : channel_refs;
        for (auto& n : names) {
            auto it = refs.find(n);
            if (it == refs.end()) continue;
            if (--it->second.refs <= 0) {
                gone.push_back(std::move(it->second.listener));
                refs.erase(it);
            }
        }
    } catch (...) {
        // Out of memory at worst; the subscription then stays, which only costs traffic.
    }
    // `gone` resets outside sub_mu (see interest).
}

void hub_core::await_confirmed(const std::vector<std::string>& names, bool pattern) {
    const auto deadline = deadline_after(opts.subscribe_timeout);
    for (const auto& n : names) {
        std::shared_ptr<pubsub_mux::listener> l;
        {
            std::lock_guard lk(sub_mu);
            auto& refs = pattern ? pattern_refs : channel_refs;
            if (auto it = refs.find(n); it != refs.end()) l = it->second.listener;
        }
        if (!l) throw connection_error("signal_hub is shut down");
        if (!l->wait_confirmed(time_left(deadline)))
            throw connection_error(
                "signal_hub: no pub/sub link (master or replica) confirmed the subscription "
                "within " +
                std::to_string(opts.subscribe_timeout.count()) + " ms");
    }
}

void hub_core::read_link() noexcept {
    // None (a cluster's links, or no memory to start one): the shared reader delivers.
    if (auto* l = mux->readable_link()) (void)subscriber_access::help_read(*l);
}

void hub_core::watch_link() {
    auto* l = mux->readable_link();
    if (!l) return;  // a cluster's links are always watched
    std::lock_guard lk(sub_mu);
    if (link_watched || sub_closed) return;
    link_watched = true;
    subscriber_access::adjust_demand(*l, 1);
}

void hub_core::sweep_slots_locked() {
    for (auto* slots : {&slots_channel, &slots_pattern})
        for (auto it = slots->begin(); it != slots->end();)
            it = it->second->empty() ? slots->erase(it) : std::next(it);
}

queue_wake::queue_wake(std::shared_ptr<hub_core> core, std::shared_ptr<waiter_state> st,
                       std::function<void()> wake)
    : core_(std::move(core)), st_(std::move(st)) {
    std::lock_guard lk(core_->mu);
    id_ = st_->next_waker++;
    st_->wakers.emplace(id_, std::move(wake));
}

queue_wake::~queue_wake() {
    std::lock_guard lk(core_->mu);
    st_->wakers.erase(id_);
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
