#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>

#include <algorithm>
#include <cctype>

namespace redcoord::detail {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

constexpr std::string_view our_mark = "permission denied: ";

bool starts_with(std::string_view s, std::string_view p) noexcept {
    return s.substr(0, p.size()) == p;
}

}  // namespace

bool is_permission_refusal(std::string_view text) noexcept {
    if (starts_with(text, "NOPERM")) return true;
    // Redis 7.0 reports a refusal inside a script as a plain ERR; 7.2 puts NOPERM inside.
    return text.find("The user executing the script can't") != std::string_view::npos ||
           text.find("NOPERM ") != std::string_view::npos;
}

std::string refused_command(std::string_view text, std::string_view sent) {
    // "... no permissions to run the 'client|setname' command" (7.0 and 7.2 alike).
    constexpr std::string_view tail = "' command";
    if (const auto end = text.find(tail); end != std::string_view::npos) {
        if (const auto begin = text.rfind('\'', end == 0 ? 0 : end - 1);
            begin != std::string_view::npos && begin < end)
            return lower(text.substr(begin + 1, end - begin - 1));
    }
    return lower(sent);
}

std::exception_ptr reply_exception(const std::string& text, std::string_view sent,
                                   std::string_view context) {
    std::string msg;
    if (!context.empty()) msg.append(context).append(": ");
    if (!is_permission_refusal(text)) return std::make_exception_ptr(reply_error(msg + text));
    std::string cmd = refused_command(text, sent);
    // Already one of ours (a handshake refusal carried as text by a fan-out's node result).
    if (text.find(our_mark) != std::string::npos)
        return std::make_exception_ptr(permission_error(std::move(cmd), msg + text));
    const bool in_script =
        text.find("script") != std::string::npos &&
        (sent == "EVAL" || sent == "EVALSHA" || sent == "eval" || sent == "evalsha");
    msg.append(our_mark).append("the ACL user may not run '").append(cmd).append("'");
    if (in_script) msg.append(" (a command, key or channel inside the script)");
    msg.append(" (see redcoord acl-rules): ").append(text);
    return std::make_exception_ptr(permission_error(std::move(cmd), msg));
}

void throw_reply_error(const std::string& text, std::string_view sent, std::string_view context) {
    std::rethrow_exception(reply_exception(text, sent, context));
}

bool error_code_is(std::string_view text, std::string_view code) noexcept {
    return text.substr(0, code.size()) == code &&
           (text.size() == code.size() || text[code.size()] == ' ');
}

bool same_command(std::string_view verb, std::string_view upper) noexcept {
    return verb.size() == upper.size() &&
           std::equal(verb.begin(), verb.end(), upper.begin(), [](char v, char u) {
               return std::toupper(static_cast<unsigned char>(v)) == u;
           });
}

}  // namespace redcoord::detail
