#include "handshake.hpp"

#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>

namespace redcoord::detail {

namespace {
// Error replies that mean "not now" rather than "no": the server is loading its dataset,
// running a script past busy-reply-threshold, or a replica refusing while its master is down.
// PING is refused with them (it has no `loading`/`stale` flag), so they surface here.
bool is_transient_refusal(std::string_view t) noexcept {
    for (std::string_view code : {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN"})
        if (error_code_is(t, code)) return true;
    return false;
}
}  // namespace

std::vector<std::vector<std::string>> handshake_commands(const endpoint& ep) {
    std::vector<std::vector<std::string>> hs;
    if (!ep.password.empty()) {
        if (ep.user.empty())
            hs.push_back({"AUTH", ep.password});
        else
            hs.push_back({"AUTH", ep.user, ep.password});
    }
    if (ep.db != 0) hs.push_back({"SELECT", std::to_string(ep.db)});
    hs.push_back({"PING"});
    return hs;
}

void throw_handshake_error(std::string_view verb, const std::string& t, const std::string& where) {
    if (is_permission_refusal(t)) throw_reply_error(t, verb, "handshake with " + where);
    if (verb == "AUTH" || t.rfind("NOAUTH", 0) == 0 || t.rfind("WRONGPASS", 0) == 0)
        throw auth_error("authentication failed for " + where + ": " + t);
    // Transient: a connection_error, which callers retry, unlike a reply_error.
    if (is_transient_refusal(t)) throw connection_error("server " + where + " not ready: " + t);
    if (verb == "SELECT") throw reply_error("cannot select database on " + where + ": " + t);
    throw reply_error("handshake with " + where + " failed: " + t);
}

}  // namespace redcoord::detail
