#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>

namespace redcoord {

void validate_name(std::string_view name, std::string_view what) {
    if (name.empty()) throw invalid_argument(std::string(what) + " must not be empty");
    if (name.size() > max_name_length)
        throw invalid_argument(std::string(what) + " is longer than " +
                               std::to_string(max_name_length) + " bytes");
    // CR/LF would let a name smuggle lines into logs and inline protocols; NUL breaks C APIs.
    if (name.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos)
        throw invalid_argument(std::string(what) + " must not contain CR, LF or NUL");
    // Keys are `...{name}...`: Redis Cluster hashes the text between the first '{' and the
    // first '}' after it, so a leading '}' would empty that tag and scatter one primitive's
    // keys over several slots.
    if (name.front() == '}') throw invalid_argument(std::string(what) + " must not start with '}'");
}

std::string make_key(std::string_view prefix, std::string_view kind, std::string_view name,
                     std::string_view suffix) {
    std::string k;
    k.reserve(prefix.size() + kind.size() + name.size() + suffix.size() + 5);
    k.append(prefix).append(kind).append(":{").append(name).append("}");
    if (!suffix.empty()) k.append(":").append(suffix);
    return k;
}

bool has_glob_chars(std::string_view s) noexcept {
    return s.find_first_of("*?[]\\") != std::string_view::npos;
}

std::string glob_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

}  // namespace redcoord
