#include <redcoord/core/hash_slot.hpp>

#include <array>

namespace redcoord {

namespace {

// The byte-wise table of CRC16/XMODEM, built at compile time.
constexpr std::array<std::uint16_t, 256> crc16_table() {
    std::array<std::uint16_t, 256> t{};
    for (unsigned i = 0; i < 256; ++i) {
        auto c = static_cast<std::uint16_t>(i << 8);
        for (int b = 0; b < 8; ++b)
            c = static_cast<std::uint16_t>((c & 0x8000) ? (c << 1) ^ 0x1021 : c << 1);
        t[i] = c;
    }
    return t;
}

constexpr auto table = crc16_table();

}  // namespace

std::uint16_t crc16_xmodem(std::string_view data) noexcept {
    std::uint16_t crc = 0;
    for (const char ch : data) {
        const auto byte = static_cast<unsigned char>(ch);
        crc = static_cast<std::uint16_t>((crc << 8) ^ table[((crc >> 8) ^ byte) & 0xff]);
    }
    return crc;
}

std::uint16_t hash_slot(std::string_view key) noexcept {
    const auto open = key.find('{');
    if (open != std::string_view::npos) {
        const auto close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    return static_cast<std::uint16_t>(crc16_xmodem(key) % cluster_slots);
}

}  // namespace redcoord
