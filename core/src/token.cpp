#include <redcoord/core/errors.hpp>
#include <redcoord/core/token.hpp>

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace redcoord {
namespace {
void fill_random(void* buf, std::size_t n) {
    auto* p = static_cast<unsigned char*>(buf);
    while (n > 0) {
        ssize_t got = ::getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            throw error(std::string("getrandom failed: ") + std::strerror(errno));
        }
        p += got;
        n -= static_cast<std::size_t>(got);
    }
}
}  // namespace

std::string random_token() {
    std::array<unsigned char, 20> bytes{};
    fill_random(bytes.data(), bytes.size());
    static constexpr char digits[] = "0123456789abcdef";
    std::string out(bytes.size() * 2, '0');
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 0xf];
    }
    return out;
}

std::uint64_t random_u64() {
    std::uint64_t v = 0;
    fill_random(&v, sizeof v);
    return v;
}

std::uint64_t random_between(std::uint64_t lo, std::uint64_t hi) {
    if (hi <= lo) return lo;
    std::uint64_t span = hi - lo;
    if (span == UINT64_MAX) return random_u64();
    return lo + random_u64() % (span + 1);
}

}  // namespace redcoord
