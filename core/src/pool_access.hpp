#pragma once
// Private to core: lets the fan-out borrow with a deadline capped by its own, and the
// script runner share the pool's READONLY handling.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>

namespace redcoord::detail {

// borrow_bounded()'s "no connection yet": a connect to the node is still under way (in the
// background, within the endpoint's connect_timeout). Not a failure of the node: the
// fan-out reports it as node_result::status::connecting.
class still_connecting : public timeout_error {
public:
    using timeout_error::timeout_error;
};

// The key a command is routed by on a cluster: its first key (EVAL's after numkeys), else its
// first argument (a channel, or nothing a node cares about: any node then serves, and a
// redirection is followed); empty for a command alone. The views point into `argv`.
std::string_view routing_key(std::span<const std::string_view> argv) noexcept;
std::string_view routing_key(std::initializer_list<std::string_view> argv) noexcept;
std::string_view routing_key(const std::vector<std::string>& argv) noexcept;

struct pool_access {
    static pooled_connection take_idle(connection_pool& p) noexcept { return p.take_idle(); }
    static pooled_connection borrow_bounded(connection_pool& p, std::chrono::milliseconds within,
                                            std::string_view route_key = {}) {
        return p.borrow_bounded(within, route_key);
    }
    static void prepare(connection_pool& p) noexcept { p.prepare(); }
    static void reply_error_seen(connection_pool& p, connection& c, const reply_error& e) noexcept {
        p.reply_error_seen(c, e);
    }
    // Makes `p` a node pool of a cluster router: new connections come from `connector` (with
    // the connect timeout), and `on_broken` is told of each connection that broke.
    static void set_cluster_node(
        connection_pool& p,
        std::function<std::unique_ptr<connection>(std::chrono::milliseconds)> connector,
        std::function<void()> on_broken);
    // A cluster pool's slot map asked for again now (at most once per the router's spacing;
    // within it, the map in hand), or null for another endpoint. @throws as slot_map().
    static std::shared_ptr<const cluster_map> fresh_slot_map(connection_pool& p);
    // detail::set_pool_connector (pool_hooks.hpp).
    static void set_connector(connection_pool& p,
                              std::function<std::unique_ptr<connection>()> connector);
};

}  // namespace redcoord::detail
