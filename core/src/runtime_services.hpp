#pragma once
// Private to core: the runtime as core's lower layers (metrics scopes, pools, pub/sub,
// Sentinel and Cluster) reach it. Declared at the bottom of core and defined by the runtime
// (runtime.cpp), so no lower unit includes runtime.hpp and the layers stay in order:
// base ← wire ← connection ← pool ← pubsub ← topology ← runtime (scripts/core-layers).

#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/log.hpp>
#include <redcoord/core/metrics.hpp>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redcoord {
class connection_pool;
class runtime;
class sentinel_resolver;
struct pool_options;
}  // namespace redcoord

namespace redcoord::detail {

class link_reactor;
class master_source;
class slot_router;
class timer_service;

// A Sentinel service's resolver: the public handle (connection_pool::sentinel()) and the
// same object as the pools and links use it.
struct sentinel_binding {
    std::shared_ptr<sentinel_resolver> resolver;
    std::shared_ptr<master_source> source;
};

// Replica discovery with the reason it found none (the pub/sub multiplexer logs a discovery
// the ACL user may not run).
struct replica_discovery {
    std::vector<endpoint> replicas;
    // The server's refusals of ROLE and of INFO replication, when it answered neither: the
    // replicas are then unknown, not absent. Empty otherwise.
    std::string refused;
};

// A view of one runtime; copyable, holds no reference count (its user holds the runtime).
class runtime_services {
public:
    explicit runtime_services(runtime& rt) noexcept : rt_(&rt) {}

    // runtime::shared(): the process's default runtime.
    static std::shared_ptr<runtime> default_runtime();

    [[nodiscard]] timer_service& timers() const noexcept;
    // runtime::metrics() and runtime::metrics_settings() (metrics scopes see a const runtime).
    [[nodiscard]] static std::shared_ptr<metrics_backend> metrics(const runtime& rt);
    [[nodiscard]] static metrics_options metrics_settings(const runtime& rt);
    void emit(log_level level, std::string_view component, std::string_view message,
              std::initializer_list<log_field> fields = {}) const noexcept;
    // runtime::reactor(). @throws std::system_error when a thread cannot be started.
    [[nodiscard]] std::shared_ptr<link_reactor> reactor() const;
    // runtime::sentinel(). @throws invalid_argument as sentinel_resolver's constructor.
    [[nodiscard]] sentinel_binding sentinel(const endpoint& service) const;
    // runtime::pool().
    [[nodiscard]] std::shared_ptr<connection_pool> pool(const endpoint& ep) const;
    // A new router of the Cluster endpoint `ep`, whose node pools are on `self` (this
    // runtime) with `opts`.
    [[nodiscard]] static std::shared_ptr<slot_router> cluster(const endpoint& ep,
                                                              const pool_options& opts,
                                                              std::shared_ptr<runtime> self);
    // discover_replicas() with the refusal kept; a Sentinel endpoint's sentinels are asked
    // through `self`'s pools. @throws as discover_replicas().
    [[nodiscard]] static replica_discovery replicas_of(const endpoint& ep,
                                                       std::shared_ptr<runtime> self);

private:
    runtime* rt_;
};

}  // namespace redcoord::detail
