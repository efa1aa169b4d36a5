#include "sentinel_setup.hpp"

#include <map>

namespace redcoord::testing::detail {

std::vector<std::pair<std::string, std::string>> sentinel_directives(const sentinel_setup& s) {
    std::vector<std::pair<std::string, std::string>> out;
    auto line = [&](const std::string& v) { out.emplace_back("sentinel", v); };
    line("myid " + s.my_id);
    line("monitor " + s.service + " " + s.master.host + " " + std::to_string(s.master.port) + " " +
         std::to_string(s.quorum));
    line("down-after-milliseconds " + s.service + " " + std::to_string(s.down_after.count()));
    line("failover-timeout " + s.service + " " + std::to_string(s.failover_timeout.count()));
    line("parallel-syncs " + s.service + " " + std::to_string(s.parallel_syncs));
    if (!s.announce_ip.empty()) line("announce-ip " + s.announce_ip);
    if (!s.auth_pass.empty()) line("auth-pass " + s.service + " " + s.auth_pass);
    for (const auto& r : s.replicas)
        line("known-replica " + s.service + " " + r.host + " " + std::to_string(r.port));
    for (const auto& o : s.others)
        line("known-sentinel " + s.service + " " + o.address.host + " " +
             std::to_string(o.address.port) + " " + o.id);
    return out;
}

std::size_t usable_replicas(const reply& sentinel_replicas) {
    std::size_t good = 0;
    for (const auto& e : sentinel_replicas.elements()) {
        std::map<std::string, std::string> f;
        for (std::size_t k = 0; k + 1 < e.elements().size(); k += 2)
            f[e.elements()[k].text()] = e.elements()[k + 1].text();
        if (f["flags"] == "slave" && f["master-link-status"] == "ok") ++good;
    }
    return good;
}

}  // namespace redcoord::testing::detail
