#include <redcoord/testing/wait.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace redcoord::testing {

std::size_t process_threads() {
    // ThreadSanitizer starts a helper thread of its own with the process's first
    // pthread_create: one made here first keeps it out of any difference of two counts.
    static const bool helper_started = [] {
        std::thread([] {}).join();
        return true;
    }();
    (void)helper_started;
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
        ++n;
    return n;
}

std::size_t threads_named(std::string_view name) {
    std::size_t n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
        std::ifstream in(e.path() / "comm");
        std::string comm;
        if (std::getline(in, comm) && comm == name) ++n;  // a thread that ended reads as none
    }
    return n;
}

}  // namespace redcoord::testing
