#pragma once
/// @file
/// Fixed-width big-endian integers and lower-case hex, the byte helpers shared by every wire
/// format of redcoord (the signal and queue envelopes, queue script arguments, tokens).
/// Internal to redcoord; not a stable API.

#include <redcoord/core/export.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

REDCOORD_API_BEGIN
namespace redcoord::detail {

/// Writes the low `N` bytes of `v`, most significant first, to `at[0..N)`.
template <std::size_t N>
void put_be(unsigned char* at, std::uint64_t v) noexcept {
    static_assert(N >= 1 && N <= 8, "put_be writes 1 to 8 bytes");
    for (std::size_t i = N; i-- > 0; v >>= 8) at[i] = static_cast<unsigned char>(v & 0xff);
}

/// Appends the low `N` bytes of `v` to `out`, most significant first.
template <std::size_t N>
void put_be(std::string& out, std::uint64_t v) {
    unsigned char b[N];
    put_be<N>(b, v);
    out.append(reinterpret_cast<const char*>(b), N);
}

/// `N` bytes of `v`, most significant first, as a string.
template <std::size_t N>
[[nodiscard]] std::string be_bytes(std::uint64_t v) {
    std::string s;
    put_be<N>(s, v);
    return s;
}

/// Reads `N` bytes at `at`, most significant first. The caller guarantees `N` readable bytes.
template <std::size_t N>
[[nodiscard]] std::uint64_t get_be(const unsigned char* at) noexcept {
    static_assert(N >= 1 && N <= 8, "get_be reads 1 to 8 bytes");
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < N; ++i) v = (v << 8) | at[i];
    return v;
}

/// Reads `N` bytes of `in` from offset `at`, most significant first. The caller guarantees
/// `at + N <= in.size()`.
template <std::size_t N>
[[nodiscard]] std::uint64_t get_be(std::string_view in, std::size_t at = 0) noexcept {
    return get_be<N>(reinterpret_cast<const unsigned char*>(in.data()) + at);
}

/// Lower-case hex of `bytes`, two digits per byte.
[[nodiscard]] inline std::string to_hex(std::span<const unsigned char> bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out(bytes.size() * 2, '0');
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 0xf];
    }
    return out;
}

/// Lower-case hex of the bytes of `bytes` (binary-safe).
[[nodiscard]] inline std::string to_hex(std::string_view bytes) {
    return to_hex(std::span<const unsigned char>(
        reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()));
}

}  // namespace redcoord::detail

REDCOORD_API_END
