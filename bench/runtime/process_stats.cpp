#include "process_stats.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <malloc.h>
#include <string>
#include <unistd.h>

namespace runtime_bench {

long threads_now() {
    long n = 0;
    for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
    return n;
}

std::vector<std::string> thread_names() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream in(e.path() / "comm");
        std::string n;
        if (std::getline(in, n)) names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string added_threads(const std::vector<std::string>& before,
                          const std::vector<std::string>& now) {
    std::vector<std::string> added;
    std::set_difference(now.begin(), now.end(), before.begin(), before.end(),
                        std::back_inserter(added));
    std::string out;
    for (const auto& n : added) out += (out.empty() ? "" : " ") + n;
    return out.empty() ? "none" : out;
}

double rss_kib() {
    ::malloc_trim(0);
    std::ifstream f("/proc/self/statm");
    long size = 0, resident = 0;
    f >> size >> resident;
    return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1024.0;
}

double heap_kib() { return static_cast<double>(mallinfo2().uordblks) / 1024.0; }

long long clients(const redcoord::testing::local_server& s) {
    const auto info = s.command({"INFO", "clients"}).text();
    const auto at = info.find("connected_clients:");
    return std::stoll(info.substr(at + 18)) - 1;  // not the INFO's own connection
}

long long channels(const redcoord::testing::local_server& s) {
    return static_cast<long long>(s.command({"PUBSUB", "CHANNELS", "*"}).elements().size());
}

}  // namespace runtime_bench
