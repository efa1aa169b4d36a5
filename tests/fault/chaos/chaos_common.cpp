#include "chaos_common.hpp"

#include <signal.h>
#include <unistd.h>

#include <thread>

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

void partitions_and_pauses(redcoord::testing::local_network& net,
                           std::vector<redcoord::testing::process>& procs,
                           const std::vector<std::size_t>& clients,
                           const std::vector<std::size_t>& targets, std::mt19937& rng,
                           std::chrono::steady_clock::time_point end, fault_timing timing,
                           outcome_base& out) {
    auto pick = [&](std::size_t n) {
        return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
    };
    auto between = [&](int lo, int hi) {
        return std::chrono::milliseconds(std::uniform_int_distribution<int>(lo, hi)(rng));
    };
    while (std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(between(timing.every_min, timing.every_max));
        const auto c = pick(clients.size());
        const auto undo_after = between(timing.undo_min, timing.undo_max);
        if (pick(2) == 0) {
            net.partition({{clients[c], targets[pick(targets.size())]}});
            ++out.partitions;
            std::this_thread::sleep_for(undo_after);
            net.heal();
        } else {
            procs[c].signal(SIGSTOP);
            ++out.pauses;
            std::this_thread::sleep_for(undo_after);
            procs[c].signal(SIGCONT);
        }
    }
}

std::vector<redcoord::testing::history::event> finish(
    std::vector<redcoord::testing::process>& procs, const run_dir& dir, std::chrono::seconds wait,
    outcome_base& out) {
    for (auto& p : procs) out.clients_finished &= p.wait_for(wait) == std::optional<int>(0);
    return redcoord::testing::history::read_log(dir.file("history.log"));
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
