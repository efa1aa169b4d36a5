#include "job_groups.hpp"

#include <charconv>

namespace redcoord::detail {

void validate_group(std::string_view group) {
    if (group.empty()) throw invalid_group("job_options::group must not be empty when given");
    if (group.size() > max_group_length)
        throw invalid_group("job_options::group is longer than " +
                            std::to_string(max_group_length) + " bytes");
    for (const char ch : group) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '{' || c == '}')
            throw invalid_group("job_options::group must not contain '{' or '}'");
        if (c < 0x20 || c == 0x7f)
            throw invalid_group("job_options::group must not contain control characters");
    }
}

void check_group_options(const job_options& o) {
    if (o.group) validate_group(*o.group);
    if (o.dedupe_for.count() < 0) throw invalid_argument("job_options::dedupe_for must be >= 0");
    if (o.debounce.count() < 0) throw invalid_argument("job_options::debounce must be >= 0");
    if ((o.dedupe_for.count() > 0 || o.debounce.count() > 0) && o.id.empty())
        throw invalid_argument("job_options::dedupe_for and debounce need an id");
    if (o.debounce.count() > 0 && !o.depends_on.empty())
        throw invalid_argument("job_options::debounce cannot be combined with depends_on");
}

bool needs_format2(const job_options& o) noexcept {
    return o.group.has_value() || o.dedupe_for.count() > 0 || o.debounce.count() > 0;
}

void throw_if_debounce_refusal(const std::string& text,
                               const std::vector<std::pair<std::string, job_options>>& sent) {
    // The server's text, possibly behind an error prefix added on the way ("ERR ...").
    const auto p = text.find("JOBSTARTED ");
    if (p == std::string::npos) return;
    std::size_t place = 0;
    const char* at = text.data() + p + 11;
    const char* end = text.data() + text.size();
    const auto r = std::from_chars(at, end, place);
    std::string id;
    if (r.ec == std::errc() && place >= 1 && place <= sent.size()) id = sent[place - 1].second.id;
    const bool waits = text.find("waiting_children", p) != std::string::npos;
    throw debounce_refused(id, waits ? job_state::waiting_children : job_state::active,
                           "job_options::debounce: job '" + id + "' is " +
                               (waits ? "waiting for its dependencies" : "running") +
                               " (only a waiting or delayed job is debounced); nothing added");
}

}  // namespace redcoord::detail
