#pragma once
// Private to core: lets the fan-out borrow with a connect deadline capped by its own.

#include <redcoord/core/pool.hpp>

namespace redcoord::detail {

struct pool_access {
    static pooled_connection take_idle(connection_pool& p) noexcept { return p.take_idle(); }
    static pooled_connection borrow_bounded(connection_pool& p, std::chrono::milliseconds within) {
        return p.borrow_bounded(within);
    }
};

}  // namespace redcoord::detail
