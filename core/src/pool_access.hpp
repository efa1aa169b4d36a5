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

struct pool_access {
    static pooled_connection take_idle(connection_pool& p) noexcept { return p.take_idle(); }
    static pooled_connection borrow_bounded(connection_pool& p, std::chrono::milliseconds within) {
        return p.borrow_bounded(within);
    }
    static void prepare(connection_pool& p) noexcept { p.prepare(); }
    static void reply_error_seen(connection_pool& p, connection& c, const reply_error& e) noexcept {
        p.reply_error_seen(c, e);
    }
    // detail::set_pool_connector (pool_hooks.hpp).
    static void set_connector(connection_pool& p,
                              std::function<std::unique_ptr<connection>()> connector);
};

}  // namespace redcoord::detail
