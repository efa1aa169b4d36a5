#include "job_output.hpp"

#include <algorithm>

namespace redcoord::cli {

void job_output::out(std::string_view bytes) {
    out_bytes_ += bytes.size();
    if (out_.size() < max_job_result) out_.append(bytes.substr(0, max_job_result - out_.size()));
}

void job_output::err(std::string_view bytes) {
    if (bytes.size() >= job_stderr_tail) {
        err_.assign(bytes.substr(bytes.size() - job_stderr_tail));
        return;
    }
    err_.append(bytes);
    if (err_.size() > job_stderr_tail) err_.erase(0, err_.size() - job_stderr_tail);
}

std::optional<std::string> job_output::progress(std::string_view bytes) {
    static constexpr std::string_view verb = "progress ";
    std::optional<std::string> last;
    while (!bytes.empty()) {
        const auto nl = bytes.find('\n');
        const auto piece = bytes.substr(0, nl);
        if (!skipping_line_) {
            line_.append(piece);
            if (line_.size() > max_progress_line) {
                skipping_line_ = true;
                line_.clear();
            }
        }
        if (nl == std::string_view::npos) break;
        bytes.remove_prefix(nl + 1);
        if (!skipping_line_) {
            if (!line_.empty() && line_.back() == '\r') line_.pop_back();
            if (line_.starts_with(verb)) last = line_.substr(verb.size());
        }
        skipping_line_ = false;
        line_.clear();
    }
    return last;
}

std::string job_output::stderr_tail() const {
    const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
    auto b = std::find_if_not(err_.begin(), err_.end(), space);
    auto e = std::find_if_not(err_.rbegin(), std::string::const_reverse_iterator(b), space).base();
    return std::string(b, e);
}

std::optional<std::string> job_output::failure(int status, job_stop stop) const {
    const std::string code = "exit status " + std::to_string(status);
    std::string text;
    switch (stop) {
        case job_stop::timed_out: text = "timed out: CMD was stopped (" + code + ")"; break;
        case job_stop::stopped:
            text = "cancelled or lease lost: CMD was stopped (" + code + ")";
            break;
        case job_stop::drained: text = "the worker stopped: CMD was stopped (" + code + ")"; break;
        case job_stop::none:
            if (status != 0)
                text = code;
            else if (result_too_large())
                text = "result too large: CMD wrote " + std::to_string(out_bytes_) +
                       " bytes to stdout, over the limit of " + std::to_string(max_job_result);
            else
                return std::nullopt;
            break;
    }
    if (auto tail = stderr_tail(); !tail.empty()) text += ": " + tail;
    return text;
}

}  // namespace redcoord::cli
