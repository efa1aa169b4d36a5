#include <redcoord/lock/acquisition.hpp>

namespace redcoord {

std::chrono::milliseconds lock_acquisition::remaining() const noexcept {
    const auto left = valid_until - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return std::chrono::milliseconds(0);
    return std::chrono::duration_cast<std::chrono::milliseconds>(left);
}

}  // namespace redcoord
