#include "barrier_keys.hpp"

#include <redcoord/core/detail/snapshot.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/signaling/inspect.hpp>

#include <cmath>
#include <cstdlib>

namespace redcoord {

barrier_inspection inspect_barrier(connection_pool& pool, std::string_view name,
                                   std::string_view prefix) {
    validate_name(name, "barrier name");
    const auto k = detail::make_barrier_keys(prefix, name);
    const auto r = detail::read_snapshot(pool, {{"HMGET", k.state, "gen", "parties"},
                                                {"ZRANGE", k.arrived, "0", "-1", "WITHSCORES"},
                                                {"TIME"}});
    if (!r[0].is_array() || r[0].elements().size() != 2)
        throw protocol_error("inspect_barrier: unexpected HMGET reply");
    barrier_inspection out;
    out.generation =
        detail::counter_of(r[0].elements()[0], "the generation of " + k.state).value_or(0);
    if (auto p = detail::counter_of(r[0].elements()[1], "the party count of " + k.state))
        out.parties = static_cast<std::size_t>(*p);
    const auto now =
        std::chrono::duration_cast<std::chrono::milliseconds>(detail::server_time(r[2]));
    if (!r[1].is_array() || r[1].elements().size() % 2 != 0)
        throw protocol_error("inspect_barrier: unexpected ZRANGE reply");
    const auto& e = r[1].elements();
    for (std::size_t i = 0; i < e.size(); i += 2) {
        // Scores are lease ends in server milliseconds (see party.hpp); RESP2 sends them as text.
        const double until = std::strtod(e[i + 1].text().c_str(), nullptr);
        const auto left =
            std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(until))) - now;
        if (left > std::chrono::milliseconds(0))
            out.arrivals.push_back({e[i].text(), left});
        else
            out.lapsed.push_back({e[i].text(), std::chrono::milliseconds(0)});
    }
    return out;
}

}  // namespace redcoord
