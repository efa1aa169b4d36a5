#include "endpoints.hpp"

#include <redcoord/core/errors.hpp>

#include <algorithm>
#include <set>

namespace redcoord::cli {
namespace {

std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t\r\n");
    return std::string(s.substr(b, e - b + 1));
}

}  // namespace

std::vector<std::string> split_url_list(std::string_view list) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= list.size()) {
        auto comma = list.find(',', pos);
        if (comma == std::string_view::npos) comma = list.size();
        std::string piece = trim(list.substr(pos, comma - pos));
        pos = comma + 1;
        if (piece.empty()) continue;
        if (piece.find("://") == std::string::npos && !out.empty()) {
            out.back() += "," + piece;  // another sentinel address of the previous URL
        } else {
            out.push_back(std::move(piece));
        }
    }
    return out;
}

std::vector<std::string> choose_urls(const std::vector<std::string>& flags, const char* env_redis) {
    if (!flags.empty()) return flags;
    if (env_redis != nullptr) {
        auto urls = split_url_list(env_redis);
        if (!urls.empty()) return urls;
    }
    return {std::string(default_url)};
}

std::vector<endpoint> resolve_endpoints(const std::vector<std::string>& urls,
                                        const char* env_password, endpoint_timeouts timeouts,
                                        const char* env_sentinel_password) {
    if (urls.empty()) throw invalid_argument("no Redis URL given");
    if (timeouts.connect && timeouts.connect->count() <= 0)
        throw invalid_argument("--connect-timeout must be > 0");
    // 0 is the URL's documented "waits forever", so the flag says the same.
    if (timeouts.command && timeouts.command->count() < 0)
        throw invalid_argument("--command-timeout must be >= 0 (0 waits forever)");
    std::vector<endpoint> out;
    std::set<std::string> seen;
    for (const auto& url : urls) {
        endpoint ep = parse_endpoint(url);
        if (ep.password.empty() && env_password != nullptr && *env_password != '\0') {
            ep.password = env_password;
        }
        if (ep.is_sentinel() && ep.sentinel_password.empty() && env_sentinel_password != nullptr &&
            *env_sentinel_password != '\0')
            ep.sentinel_password = env_sentinel_password;
        if (timeouts.connect) ep.connect_timeout = *timeouts.connect;
        if (timeouts.command) ep.command_timeout = *timeouts.command;
        if (!seen.insert(ep.to_string()).second)
            throw invalid_argument("the same server is named twice: " + ep.to_string());
        out.push_back(std::move(ep));
    }
    return out;
}

}  // namespace redcoord::cli
