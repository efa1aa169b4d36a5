#include "chaos_common.hpp"

#include <unistd.h>

namespace chaos {

bool outcome_base::broke(const std::string& rule) const {
    for (const auto& v : violations)
        if (v.rule == rule) return true;
    return false;
}

std::string outcome_base::report() const {
    std::string s;
    for (const auto& v : violations) s += v.rule + ": " + v.what + "\n";
    return s;
}

std::string outcome_base::faults() const {
    return std::to_string(partitions) + " partitions, " + std::to_string(pauses) + " pauses, " +
           std::to_string(restarts) + " restarts";
}

run_dir::run_dir(const std::string& part, unsigned seed)
    : path_(std::filesystem::temp_directory_path() /
            ("rc-chaos-" + part + "-" + std::to_string(::getpid()) + "-" + std::to_string(seed))) {
    std::filesystem::create_directories(path_);
}

run_dir::~run_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

redcoord::endpoint quick_endpoint(const std::string& url) {
    auto ep = redcoord::parse_endpoint(url);
    ep.connect_timeout = std::chrono::milliseconds(200);
    ep.command_timeout = std::chrono::milliseconds(300);
    return ep;
}

std::int64_t history_ns(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

history_log::history_log(const std::string& path) : file_(std::fopen(path.c_str(), "a")) {}

history_log::~history_log() {
    if (file_) std::fclose(file_);
}

void history_log::write(const redcoord::testing::history::event& e) {
    const std::string line = redcoord::testing::history::to_log_line(e);
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
}

}  // namespace chaos
