#include <redcoord/core/detail/async_link.hpp>
#include <redcoord/core/detail/io_loop.hpp>
#include <redcoord/core/detail/pubsub_mux.hpp>
#include <redcoord/core/detail/serial_executor.hpp>
#include <redcoord/core/detail/timer_service.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/core/sentinel.hpp>

#include "cluster_router.hpp"
#include "link_reactor.hpp"
#include "runtime_services.hpp"
#include "sentinel_replicas.hpp"

#include <string>
#include <utility>
#include <vector>

namespace redcoord {

namespace detail {

std::string endpoint_key(const endpoint& ep) {
    std::string key = ep.to_string();
    const tls_options& t = ep.tls;
    for (const std::string* f :
         {&ep.host, &ep.unix_path, &ep.user, &ep.password, &ep.service, &ep.sentinel_user,
          &ep.sentinel_password, &t.ca_file, &t.ca_dir, &t.server_name, &t.cert_file, &t.key_file})
        key += '\0' + *f;
    key += std::string("\0tls", 4) + (t.enabled ? "1" : "0") + (t.verify_peer ? "1" : "0") +
           std::to_string(static_cast<int>(t.min_version));
    key += '\0' + std::to_string(ep.port) + '/' + std::to_string(ep.db) + '/' +
           std::to_string(ep.connect_timeout.count()) + '/' +
           std::to_string(ep.command_timeout.count()) + '/' + (ep.keepalive ? "k" : "-");
    for (const auto& s : ep.sentinels) key += '\0' + s.host + ':' + std::to_string(s.port);
    return key;
}

}  // namespace detail

runtime::runtime(boost::asio::io_context* io)
    : callbacks_(std::make_unique<detail::serial_executor>()),
      observers_(std::make_unique<detail::strand>(*callbacks_)),
      timers_(std::make_unique<detail::timer_service>(observers_.get())),
      io_(io ? std::make_unique<detail::io_loop>(*io) : std::make_unique<detail::io_loop>()) {}

runtime::~runtime() = default;

std::shared_ptr<runtime> runtime::create() { return std::shared_ptr<runtime>(new runtime()); }

std::shared_ptr<runtime> runtime::create(boost::asio::io_context& io) {
    return std::shared_ptr<runtime>(new runtime(&io));
}

boost::asio::io_context& runtime::io() { return io_->context(); }

bool runtime::io_is_callers() const noexcept { return io_->external(); }

runtime_clock& runtime::clock() const noexcept { return timers_->clock(); }

std::shared_ptr<detail::async_link> runtime::link(const endpoint& ep) {
    const auto key = detail::endpoint_key(ep);
    // A Sentinel endpoint's link asks this runtime's resolver of that service, on its timers;
    // taken before mu_, since sentinel() takes topology_mu_ and may make pools (mu_).
    const auto resolver = ep.is_sentinel() ? sentinel(ep) : nullptr;
    std::lock_guard l(mu_);
    if (auto k = async_links_[key].lock()) return k;
    auto k = resolver ? detail::async_link::create(io_->context(), ep, resolver, timers_.get())
                      : detail::async_link::create(io_->context(), ep);
    async_links_[key] = k;
    for (auto it = async_links_.begin(); it != async_links_.end();)
        it = it->second.expired() ? async_links_.erase(it) : std::next(it);
    return k;
}

std::shared_ptr<detail::link_reactor> runtime::reactor() {
    std::lock_guard l(topology_mu_);
    auto r = reactor_.lock();
    if (!r) {
        r = detail::link_reactor::create(*timers_);
        reactor_ = r;
    }
    return r;
}

std::shared_ptr<sentinel_resolver> runtime::sentinel(const endpoint& service) {
    // Everything that shapes the resolver's connections is part of the key.
    const auto key = detail::endpoint_key(service);
    {
        std::lock_guard l(topology_mu_);
        if (auto r = resolvers_[key].lock()) return r;
    }
    // No resolver is made or dropped under topology_mu_: a resolver holding its own mutex
    // starts its notification subscribers, which take topology_mu_ (reactor()), so the two
    // would be taken in both orders.
    auto made = std::make_shared<sentinel_resolver>(
        service, sentinel_options{.runtime = shared_from_this()});
    std::shared_ptr<sentinel_resolver> first;
    {
        std::lock_guard l(topology_mu_);
        std::erase_if(resolvers_, [](const auto& e) { return e.second.expired(); });
        first = resolvers_[key].lock();
        if (!first) resolvers_[key] = first = made;
    }
    return first;  // `made`, unless another caller's came first (then `made` goes here)
}

std::shared_ptr<runtime> runtime::shared() {
    // Never destroyed before the objects that use it: they hold it too.
    static const std::shared_ptr<runtime> instance = create();
    return instance;
}

std::shared_ptr<connection_pool> runtime::pool(const endpoint& ep, pool_options opts) {
    const auto key = detail::endpoint_key(ep);
    std::lock_guard l(mu_);
    if (auto p = pools_[key].lock()) return p;
    auto p = std::make_shared<connection_pool>(ep, opts, shared_from_this());
    pools_[key] = p;
    for (auto it = pools_.begin(); it != pools_.end();)
        it = it->second.expired() ? pools_.erase(it) : std::next(it);
    return p;
}

std::shared_ptr<detail::pubsub_mux> runtime::pubsub(const endpoint& ep) {
    const auto key = detail::endpoint_key(ep);
    std::lock_guard l(mu_);
    if (auto m = links_[key].lock()) return m;
    auto m = std::make_shared<detail::pubsub_mux>(ep, shared_from_this());
    links_[key] = m;
    for (auto it = links_.begin(); it != links_.end();)
        it = it->second.expired() ? links_.erase(it) : std::next(it);
    return m;
}

runtime_stats runtime::stats() const {
    runtime_stats s;
    std::lock_guard l(mu_);
    for (const auto& [k, w] : pools_)
        if (!w.expired()) ++s.pools;
    for (const auto& [k, w] : links_)
        if (auto m = w.lock()) {
            ++s.pubsub_links;
            s.pubsub_interests += m->interests();
        }
    s.timer_ticks = timers_->ticks_run();
    s.tick_workers = timers_->worker_threads();
    return s;
}

void runtime::set_metrics(std::shared_ptr<metrics_backend> m, metrics_options opts) {
    std::lock_guard l(obs_mu_);
    metrics_ = std::move(m);
    metrics_opts_ = std::move(opts);
}

std::shared_ptr<metrics_backend> runtime::metrics() const {
    std::lock_guard l(obs_mu_);
    return metrics_;
}

metrics_options runtime::metrics_settings() const {
    std::lock_guard l(obs_mu_);
    return metrics_opts_;
}

void runtime::set_log_sink(std::shared_ptr<log_sink> s) {
    std::lock_guard l(obs_mu_);
    has_sink_.store(s != nullptr, std::memory_order_release);
    sink_ = std::move(s);
}

std::shared_ptr<log_sink> runtime::log() const {
    std::lock_guard l(obs_mu_);
    return sink_;
}

void runtime::emit(log_level level, std::string_view component, std::string_view message,
                   std::initializer_list<log_field> fields) const noexcept {
    if (!has_sink_.load(std::memory_order_acquire)) return;
    try {
        // Copied out so the sink runs without the runtime's lock (it may be slow).
        auto s = log();
        if (!s) return;
        if (auto* outbox = detail::observer_outbox()) {
            // A thread that must never run user code (the timer thread): the sink gets a copy
            // of the record on the callback executor.
            std::vector<std::pair<std::string, std::string>> kept;
            kept.reserve(fields.size());
            for (const auto& f : fields) kept.emplace_back(f.key, f.value);
            detail::post_observation(*outbox, [s = std::move(s), level, c = std::string(component),
                                               m = std::string(message), kept = std::move(kept)] {
                std::vector<log_field> v;
                v.reserve(kept.size());
                for (const auto& [k, val] : kept) v.push_back({k, val});
                s->write(log_record{level, c, m, v});
            });
            return;
        }
        s->write(log_record{level, component, message,
                            std::span<const log_field>(fields.begin(), fields.size())});
    } catch (...) {
        // A sink that throws must not cost the operation that logs.
    }
}

// The runtime as core's lower layers reach it (runtime_services.hpp): defined here, the one
// unit that may see every layer.
namespace detail {

std::shared_ptr<runtime> runtime_services::default_runtime() { return runtime::shared(); }

timer_service& runtime_services::timers() const noexcept { return rt_->timers(); }

std::shared_ptr<metrics_backend> runtime_services::metrics(const runtime& rt) {
    return rt.metrics();
}

metrics_options runtime_services::metrics_settings(const runtime& rt) {
    return rt.metrics_settings();
}

void runtime_services::emit(log_level level, std::string_view component, std::string_view message,
                            std::initializer_list<log_field> fields) const noexcept {
    rt_->emit(level, component, message, fields);
}

std::shared_ptr<link_reactor> runtime_services::reactor() const { return rt_->reactor(); }

sentinel_binding runtime_services::sentinel(const endpoint& service) const {
    auto r = rt_->sentinel(service);
    return {r, r};
}

std::shared_ptr<connection_pool> runtime_services::pool(const endpoint& ep) const {
    return rt_->pool(ep);
}

std::shared_ptr<slot_router> runtime_services::cluster(const endpoint& ep, const pool_options& opts,
                                                       std::shared_ptr<runtime> self) {
    return std::make_shared<cluster_router>(ep, opts, std::move(self));
}

replica_discovery runtime_services::replicas_of(const endpoint& ep, std::shared_ptr<runtime> self) {
    return discover_replicas_of(ep, std::move(self));
}

}  // namespace detail

}  // namespace redcoord
