#include <redcoord/core/detail/sha1.hpp>

#include <redcoord/core/errors.hpp>

#include "openssl_init.hpp"

#include <openssl/evp.h>

namespace redcoord::detail {

// libcrypto rather than Boost's uuids::detail::sha1, an internal API whose digest layout
// changed between Boost releases.
std::array<unsigned char, 20> sha1(std::string_view data) {
    // Fetched once: EVP_sha1() makes every EVP_Digest fetch the implementation anew (OpenSSL
    // 3), which took 0.7 us a digest here against 0.27 us with this one, and a queue hashes
    // every message's envelope header. Kept for the process (reachable, never freed), as
    // OpenSSL keeps its providers without its exit-time clean-up (openssl_init.hpp).
    static EVP_MD* const md = [] {
        init_openssl();
        return EVP_MD_fetch(nullptr, "SHA1", nullptr);
    }();
    if (md == nullptr) throw error("cannot compute a SHA-1 digest (libcrypto has no SHA1)");
    std::array<unsigned char, 20> d{};
    unsigned int len = 0;
    if (EVP_Digest(data.data(), data.size(), d.data(), &len, md, nullptr) != 1 || len != d.size())
        throw error("cannot compute a SHA-1 digest (libcrypto)");
    return d;
}

std::string sha1_hex(std::string_view data) {
    static constexpr char hex[] = "0123456789abcdef";
    const auto d = sha1(data);
    std::string out(2 * d.size(), '0');
    for (std::size_t i = 0; i < d.size(); ++i) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 0xf];
    }
    return out;
}

}  // namespace redcoord::detail
