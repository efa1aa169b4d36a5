#include <redcoord/testing/wait.hpp>

#include <filesystem>

namespace redcoord::testing {

std::size_t process_threads() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
        ++n;
    return n;
}

}  // namespace redcoord::testing
