#pragma once
/// @file
/// Turns an error reply into the typed exception it stands for: permission_error for an ACL
/// refusal, reply_error otherwise. Every place in redcoord that makes an exception of an error
/// reply goes through here, so a user missing a command, key or channel always gets
/// permission_error naming the command. Internal to redcoord; not a stable API.

#include <exception>
#include <redcoord/core/export.hpp>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// True when `text` (an error reply's text) is an ACL refusal: `NOPERM ...` (a command, key
/// or channel the user may not use, Redis 6.2+), or the error a script's redis.call() raises
/// for one (Redis 7.0: `ERR The user executing the script can't ...`; 7.2+: NOPERM inside).
[[nodiscard]] bool is_permission_refusal(std::string_view text) noexcept;

/// The command an ACL refusal names (`'evalsha'` in `... to run the 'evalsha' command`),
/// lower case; when the text names none (a key or channel refusal, a refusal inside a script
/// on Redis 7.0), `sent` (the command redcoord sent, e.g. "BLMOVE") in lower case.
[[nodiscard]] std::string refused_command(std::string_view text, std::string_view sent);

/// The exception for error reply `text` answering command `sent` (its first word, e.g.
/// "EVALSHA"): permission_error when is_permission_refusal(text), else reply_error(text).
/// `context`, when not empty, starts the message ("handshake with host:port").
[[nodiscard]] std::exception_ptr reply_exception(const std::string& text, std::string_view sent,
                                                 std::string_view context = {});

/// True when error reply `text` starts with the code `code` (`TRYAGAIN`, `CLUSTERDOWN`, ...):
/// `code` followed by a space or the end, so `BUSY` does not match `BUSYKEY`.
[[nodiscard]] bool error_code_is(std::string_view text, std::string_view code) noexcept;

/// True when command word `verb`, in any case, is `upper` (an upper-case command name).
[[nodiscard]] bool same_command(std::string_view verb, std::string_view upper) noexcept;

/// Throws reply_exception(text, sent, context).
[[noreturn]] void throw_reply_error(const std::string& text, std::string_view sent,
                                    std::string_view context = {});

}  // namespace redcoord::detail

REDCOORD_API_END
