#include "limit_scripts.hpp"

#include "lua_sources.hpp"

namespace redcoord::detail {

const script& gcra_script() {
    static const script s(gcra_lua);
    return s;
}

const script& window_log_script() {
    static const script s(window_log_lua);
    return s;
}

}  // namespace redcoord::detail
