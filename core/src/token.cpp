#include <redcoord/core/detail/bytes.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/token.hpp>

#include <pthread.h>
#include <sys/random.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace redcoord {
namespace {
void fill_random(void* buf, std::size_t n) {
    auto* p = static_cast<unsigned char*>(buf);
    while (n > 0) {
        ssize_t got = ::getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            throw error(std::string("getrandom failed: ") + std::generic_category().message(errno));
        }
        p += got;
        n -= static_cast<std::size_t>(got);
    }
}
// Bumped in a forked child, so the child never hands out bytes its parent also used.
std::atomic<std::uint64_t> fork_generation{0};

void after_fork_in_child() { fork_generation.fetch_add(1, std::memory_order_relaxed); }

// Per-thread random bytes, drawn from getrandom 512 at a time: a token per lock attempt would
// otherwise cost a system call each.
class random_buffer {
public:
    void take(unsigned char* out, std::size_t n) {
        static const bool registered = [] {
            return ::pthread_atfork(nullptr, nullptr, after_fork_in_child) == 0;
        }();
        (void)registered;
        const auto gen = fork_generation.load(std::memory_order_relaxed);
        if (gen != generation_) {
            used_ = bytes_.size();  // inherited from the parent: discard
            generation_ = gen;
        }
        while (n > 0) {
            if (used_ == bytes_.size()) {
                fill_random(bytes_.data(), bytes_.size());
                used_ = 0;
            }
            const std::size_t k = std::min(n, bytes_.size() - used_);
            std::memcpy(out, bytes_.data() + used_, k);
            // Handed-out bytes are wiped so a later read of this buffer cannot recover them.
            std::memset(bytes_.data() + used_, 0, k);
            used_ += k;
            out += k;
            n -= k;
        }
    }

private:
    std::array<unsigned char, 512> bytes_{};
    std::size_t used_ = bytes_.size();
    std::uint64_t generation_ = 0;
};

thread_local random_buffer buffer;

}  // namespace

std::string random_token() {
    std::array<unsigned char, 20> bytes{};
    buffer.take(bytes.data(), bytes.size());
    return detail::to_hex(bytes);
}

std::uint64_t random_u64() {
    std::uint64_t v = 0;
    buffer.take(reinterpret_cast<unsigned char*>(&v), sizeof v);
    return v;
}

std::uint64_t random_between(std::uint64_t lo, std::uint64_t hi) {
    if (hi <= lo) return lo;
    std::uint64_t span = hi - lo;
    if (span == UINT64_MAX) return random_u64();
    return lo + random_u64() % (span + 1);
}

}  // namespace redcoord
