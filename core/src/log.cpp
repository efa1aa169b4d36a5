#include <redcoord/core/log.hpp>

namespace redcoord {

std::string_view to_string(log_level l) noexcept {
    switch (l) {
        case log_level::debug: return "debug";
        case log_level::info: return "info";
        case log_level::warning: return "warning";
        case log_level::error: return "error";
    }
    return "unknown";
}

std::string format_fields(std::span<const log_field> fields) {
    std::string out;
    for (const auto& f : fields) {
        out += ' ';
        out += f.key;
        out += '=';
        const bool quote =
            f.value.empty() || f.value.find_first_of(" \"=\n\t") != std::string_view::npos;
        if (!quote) {
            out += f.value;
            continue;
        }
        out += '"';
        for (char c : f.value) {
            if (c == '"' || c == '\\') out += '\\';
            if (c == '\n') {
                out += "\\n";
                continue;
            }
            out += c;
        }
        out += '"';
    }
    return out;
}

}  // namespace redcoord
