#include "hub_core.hpp"

#include "signaling_scripts.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/detail/bytes.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord_lua/signaling.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace redcoord {

using namespace std::chrono_literals;
using detail::hub_core;
using detail::waiter_state;

namespace {

// Unicast (docs/signaling.md; https://redis.io/commands/pubsub-channels/): list the waiters'
// channels under the unicast prefix and publish to one at a random index. Names of a different
// length belong to another unicast channel whose name merely starts with this one, so they are
// skipped. ARGV[5] is the PUBSUB subcommand: CHANNELS, or SHARDCHANNELS on a cluster, where the
// script runs on the shard of KEYS[1] (the unicast prefix, whose hash tag `{channel}` every
// waiter channel shares) and, as cluster_publish::sharded, publishes with SPUBLISH.
const script unicast_publish(detail::unicast_publish_lua, cluster_publish::sharded);

constexpr std::size_t waiter_id_length = 16;

// Before anything is sent: a message larger than the server's pubsub output-buffer limit gets
// its subscribers disconnected while PUBLISH still counts them, so it would be lost unseen.
void check_payload(std::string_view payload, const signal_options& opts) {
    if (payload.size() > opts.max_payload)
        throw payload_too_large(
            "signal payload is " + std::to_string(payload.size()) +
            " bytes; signal_options::max_payload is " + std::to_string(opts.max_payload) +
            " (a pub/sub message over the server's client-output-buffer-limit pubsub "
            "disconnects its subscribers and is lost): send bulk data through a queue, or a "
            "key and a signal");
}

std::string new_waiter_id() {
    return detail::to_hex(detail::be_bytes<waiter_id_length / 2>(random_u64()));
}

std::vector<std::string> distinct_names(const std::vector<std::string>& names,
                                        std::string_view what) {
    if (names.empty()) throw invalid_argument(std::string(what) + " list must not be empty");
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (auto& n : names) {
        validate_name(n, what);
        if (seen.insert(n).second) out.push_back(n);
    }
    return out;
}

// How long a waiter reads the sockets itself before it sleeps: `spin`, but never past its
// timeout (compared in milliseconds, so a timeout of milliseconds::max() is not converted).
std::chrono::microseconds spin_for(std::chrono::microseconds spin,
                                   std::chrono::milliseconds timeout) {
    if (timeout <= 0ms) return std::chrono::microseconds(0);
    if (timeout >= std::chrono::ceil<std::chrono::milliseconds>(spin)) return spin;
    return std::chrono::duration_cast<std::chrono::microseconds>(timeout);
}

}  // namespace

namespace detail {
const script& unicast_script() { return unicast_publish; }
}  // namespace detail

// ---- waiter ----

waiter::waiter(std::shared_ptr<hub_core> core, std::shared_ptr<waiter_state> st)
    : core_(std::move(core)), state_(std::move(st)) {}
waiter::waiter(waiter&&) noexcept = default;
waiter& waiter::operator=(waiter&& o) noexcept {
    if (this != &o) {
        if (core_ && state_) core_->unregister_waiter(state_);
        core_ = std::move(o.core_);
        state_ = std::move(o.state_);
    }
    return *this;
}
waiter::~waiter() {
    if (core_ && state_) core_->unregister_waiter(state_);
}

std::optional<signal> waiter::try_wait() { return wait(0ms); }

std::optional<signal> waiter::wait(std::chrono::milliseconds timeout) {
    if (!core_ || !state_) return std::nullopt;
    const auto deadline = deadline_after(timeout);
    auto queued = [&] { return state_->queued.load(std::memory_order_acquire) != 0; };
    if (!queued()) {
        // A signal already in the link's socket is read on this thread, without the shared
        // reader's wake-up and hand-off. Keep looking for `spin` (a busy poll, not yield():
        // on a loaded box a yield can hand the core away for a whole time slice, which is
        // what the spin is meant to avoid).
        const auto until = deadline_after(spin_for(core_->opts.spin, timeout));
        for (;;) {
            core_->read_link();
            if (queued() || std::chrono::steady_clock::now() >= until) break;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
    }
    std::unique_lock lk(core_->mu);
    auto ready = [&] { return !state_->queue.empty() || core_->closed; };
    if (timeout.count() > 0 && !ready()) {
        // Blocking: a link read on demand must be watched until we are done. Raised under
        // `mu`, which the reader needs to deliver, so nothing slips between.
        std::optional<detail::demand_hold> watched;
        if (auto* l = core_->mux->readable_link()) watched.emplace(*l);
        state_->cv.wait_until(lk, deadline, ready);
    }
    if (state_->queue.empty()) return std::nullopt;
    signal s = std::move(state_->queue.front());
    state_->queue.pop_front();
    state_->queued.store(state_->queue.size(), std::memory_order_release);
    return s;
}

std::size_t waiter::pending() const {
    if (!core_ || !state_) return 0;
    core_->read_link();
    std::lock_guard lk(core_->mu);
    return state_->queue.size();
}

const std::string& waiter::id() const noexcept {
    static const std::string none;
    return state_ ? state_->id : none;
}

// ---- signal_hub ----

// `replicas` is by value in the public API (a caller may move); the links copy each endpoint.
// NOLINTNEXTLINE(performance-unnecessary-value-param): by value in the public API (see above)
signal_hub::signal_hub(connection_pool& master, std::vector<endpoint> replicas, signal_options opts)
    : core_(std::make_shared<hub_core>(master, std::move(opts))) {
    // The multiplexer finds the master's replicas itself (ROLE, or the sentinels); the
    // replicas given here are added even when it does not report them. The master link
    // starts now (if the runtime has none yet), so the first listen() finds it up.
    for (auto& r : replicas) core_->mux->add_replica(r);
    (void)core_->mux->readable_link();
}

signal_hub::~signal_hub() { core_->shutdown(); }

void signal_hub::add_replica(const endpoint& replica) { core_->mux->add_replica(replica); }

std::size_t signal_hub::broadcast(std::string_view channel, std::string_view payload) {
    validate_name(channel, "channel");
    check_payload(payload, core_->opts);
    std::string wire = core_->next_envelope();
    wire.append(payload);
    // On a cluster, sharded pub/sub: the message stays on the channel's shard, where the hubs'
    // links listen, instead of crossing the cluster bus to every node.
    auto r = core_->pool.command(
        {core_->pool.where().is_cluster() ? "SPUBLISH" : "PUBLISH", channel, wire});
    return static_cast<std::size_t>(std::max<std::int64_t>(0, r.integer()));
}

std::string signal_hub::unicast_prefix(std::string_view channel) const {
    std::string p = core_->unicast_root;
    p.append(channel).append("}:");
    return p;
}

namespace {
// Sharded pub/sub has no patterns (redis.io, "Sharded Pub/Sub").
void refuse_pattern_on_cluster(const connection_pool& pool) {
    if (pool.where().is_cluster())
        throw invalid_argument(
            "signal_hub: pattern listens are not available on a Redis Cluster endpoint "
            "(sharded pub/sub, which keeps a channel on its shard, has no patterns); listen on "
            "channels");
}
}  // namespace

bool signal_hub::unicast(std::string_view channel, std::string_view payload) {
    validate_name(channel, "channel");
    check_payload(payload, core_->opts);
    const std::string prefix = unicast_prefix(channel);
    const std::string pattern = glob_escape(prefix);
    const std::string index = std::to_string(random_u64() >> 33);  // < 2^31: exact in Lua numbers
    std::string wire = core_->next_envelope();
    wire.append(payload);
    const std::string length = std::to_string(prefix.size() + waiter_id_length);
    // On a cluster every waiter channel of `channel` hashes by the tag `{channel}` of the
    // prefix: the shard that serves the prefix's slot lists them all (SHARDCHANNELS).
    auto r = core_->pool.where().is_cluster()
                 ? unicast_publish.run(core_->pool, {prefix},
                                       {pattern, index, wire, length, "SHARDCHANNELS"})
                 : unicast_publish.run(core_->pool, {}, {pattern, index, wire, length, "CHANNELS"});
    return r.integer() > 0;
}

waiter signal_hub::listen(const std::vector<std::string>& channels) {
    auto st = std::make_shared<waiter_state>();
    st->names = distinct_names(channels, "channel");
    st->id = new_waiter_id();
    core_->register_waiter(st);
    waiter w(core_, st);  // from here on its destructor unregisters
    core_->await_confirmed(st->names, false);
    return w;
}

waiter signal_hub::listen_pattern(const std::vector<std::string>& patterns) {
    refuse_pattern_on_cluster(core_->pool);
    auto st = std::make_shared<waiter_state>();
    st->names = distinct_names(patterns, "pattern");
    st->pattern = true;
    st->id = new_waiter_id();
    core_->register_waiter(st);
    waiter w(core_, st);
    core_->await_confirmed(st->names, true);
    return w;
}

waiter signal_hub::listen_unicast(std::string_view channel) {
    validate_name(channel, "channel");
    auto st = std::make_shared<waiter_state>();
    st->id = new_waiter_id();
    st->names = {unicast_prefix(channel) + st->id};
    st->unicast_channel = std::string(channel);
    core_->register_waiter(st);
    waiter w(core_, st);
    core_->await_confirmed(st->names, false);
    return w;
}

std::optional<signal> signal_hub::wait(std::string_view channel,
                                       std::chrono::milliseconds timeout) {
    return listen({std::string(channel)}).wait(timeout);
}

std::optional<signal> signal_hub::try_wait(std::string_view channel) { return wait(channel, 0ms); }

std::optional<signal> signal_hub::wait_any(const std::vector<std::string>& channels,
                                           std::chrono::milliseconds timeout) {
    return listen(channels).wait(timeout);
}

std::optional<std::vector<signal>> signal_hub::wait_all(const std::vector<std::string>& channels,
                                                        std::chrono::milliseconds timeout) {
    auto w = listen(channels);
    const auto deadline = deadline_after(timeout);
    const auto names = distinct_names(channels, "channel");
    std::map<std::string, signal> got;
    while (got.size() < names.size()) {
        auto s = w.wait(time_left(deadline));
        if (!s) return std::nullopt;
        auto ch = s->channel;
        got.emplace(std::move(ch), std::move(*s));  // keeps the first per channel
    }
    std::vector<signal> out;
    out.reserve(names.size());
    for (auto& n : names) out.push_back(std::move(got.at(n)));
    return out;
}

std::optional<signal> signal_hub::wait_pattern(std::string_view pattern,
                                               std::chrono::milliseconds timeout) {
    return listen_pattern({std::string(pattern)}).wait(timeout);
}

std::optional<signal> signal_hub::wait_unicast(std::string_view channel,
                                               std::chrono::milliseconds timeout) {
    return listen_unicast(channel).wait(timeout);
}

namespace {

// Lives inside a connected slot; when Boost.Signals2 releases the slot (disconnect or
// destruction of the connection), the hub drops its subscription reference.
struct slot_guard {
    slot_guard(std::weak_ptr<hub_core> c, std::string n, bool p)
        : core(std::move(c)), name(std::move(n)), pattern(p) {}
    slot_guard(const slot_guard&) = delete;
    slot_guard& operator=(const slot_guard&) = delete;
    std::weak_ptr<hub_core> core;
    std::string name;
    bool pattern;
    ~slot_guard() {
        if (auto c = core.lock()) c->unref({name}, pattern);
    }
};

boost::signals2::scoped_connection connect_slot(const std::shared_ptr<hub_core>& core,
                                                std::string_view name_in, bool pattern,
                                                signal_hub::slot_type slot) {
    if (!slot) throw invalid_argument("signal_hub::on needs a slot");
    if (pattern) refuse_pattern_on_cluster(core->pool);
    std::string name(name_in);
    validate_name(name, pattern ? "pattern" : "channel");
    std::shared_ptr<detail::slot_signal> sig;
    {
        std::lock_guard lk(core->mu);
        if (core->closed) throw usage_error("signal_hub is shut down");
        auto& slots = pattern ? core->slots_pattern : core->slots_channel;
        // A new name: first drop the entries of names whose slots are all gone, so a process
        // that connects slots on ever new channels does not grow the map forever.
        if (slots.find(name) == slots.end()) core->sweep_slots_locked();
        auto& entry = slots[name];
        if (!entry) entry = std::make_shared<detail::slot_signal>();
        sig = entry;
    }
    core->ref({name}, pattern);
    core->watch_link();
    auto guard = std::make_shared<slot_guard>(core, name, pattern);
    hub_core* raw = core.get();  // slots run only on the hub's strand, closed before the core goes
    boost::signals2::scoped_connection conn =
        sig->connect([raw, guard, slot = std::move(slot)](const signal& s) {
            try {
                slot(s);
            } catch (...) {
                std::function<void(const signal&, std::exception_ptr)> report;
                {
                    std::lock_guard lk(raw->mu);
                    ++raw->counters.slot_errors;
                    report = raw->opts.on_slot_error;
                }
                if (report) {
                    try {
                        report(s, std::current_exception());
                    } catch (...) {}
                }
            }
        });
    core->await_confirmed({name}, pattern);
    return conn;
}

}  // namespace

boost::signals2::scoped_connection signal_hub::on(std::string_view channel, slot_type slot) {
    return connect_slot(core_, channel, false, std::move(slot));
}

boost::signals2::scoped_connection signal_hub::on_pattern(std::string_view pattern,
                                                          slot_type slot) {
    return connect_slot(core_, pattern, true, std::move(slot));
}

std::string signal_hub::envelope(std::string_view payload) {
    check_payload(payload, core_->opts);
    std::string wire = core_->next_envelope();
    wire.append(payload);
    return wire;
}

connection_pool& signal_hub::master() noexcept { return core_->pool; }
const signal_options& signal_hub::options() const noexcept { return core_->opts; }

signal_hub_stats signal_hub::stats() const {
    std::lock_guard lk(core_->mu);
    return core_->counters;
}

std::size_t signal_hub::connected_links() const { return core_->mux->connected_links(); }

}  // namespace redcoord
