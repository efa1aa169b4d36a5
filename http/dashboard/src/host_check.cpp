#include "host_check.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace redcoord::detail {

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

bool host_allowed(std::string_view host, const std::vector<std::string>& allowed) {
    if (host.empty()) return true;
    std::string name;
    if (host.front() == '[') {
        const auto close = host.find(']');
        if (close == std::string_view::npos) return false;
        name = std::string(host.substr(1, close - 1));
        in6_addr a6{};
        return inet_pton(AF_INET6, name.c_str(), &a6) == 1;
    }
    name = std::string(host.substr(0, host.rfind(':')));
    in_addr a4{};
    if (inet_pton(AF_INET, name.c_str(), &a4) == 1 || same_name(name, "localhost")) return true;
    return std::any_of(allowed.begin(), allowed.end(),
                       [&](const std::string& a) { return same_name(name, a); });
}

}  // namespace redcoord::detail
