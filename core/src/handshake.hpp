#pragma once
// The commands that open a connection (AUTH, SELECT, PING) and the typed error for a refused
// one, shared by the blocking connection and the event loop's link.

#include <redcoord/core/endpoint.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace redcoord::detail {

// AUTH (with the user when there is one), SELECT when db != 0, then PING.
std::vector<std::vector<std::string>> handshake_commands(const endpoint& ep);

// The typed error for an error reply `text` to the handshake command `verb` on `where`:
// permission_error for an ACL refusal, auth_error for a refused password, connection_error for
// "not now" (LOADING, BUSY, MASTERDOWN, TRYAGAIN: callers retry), reply_error otherwise.
[[noreturn]] void throw_handshake_error(std::string_view verb, const std::string& text,
                                        const std::string& where);

}  // namespace redcoord::detail
