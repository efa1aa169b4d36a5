#pragma once
// Private to core: lets the fan-out borrow with a deadline capped by its own, and the
// script runner share the pool's READONLY handling.

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>

namespace redcoord::detail {

struct pool_access {
    static pooled_connection take_idle(connection_pool& p) noexcept { return p.take_idle(); }
    static pooled_connection borrow_bounded(connection_pool& p, std::chrono::milliseconds within) {
        return p.borrow_bounded(within);
    }
    static void reply_error_seen(connection_pool& p, connection& c, const reply_error& e) noexcept {
        p.reply_error_seen(c, e);
    }
};

}  // namespace redcoord::detail
