#include <redcoord/queue/envelope.hpp>

#include <algorithm>

namespace redcoord {
namespace {

void put_be(std::string& out, std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_be(std::string_view in, std::size_t at, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<std::uint8_t>(in[at + static_cast<std::size_t>(i)]);
    return v;
}

}  // namespace

std::string encode_envelope(const envelope& e) {
    std::string out;
    out.reserve(envelope_header_size + e.payload.size());
    out.append(envelope_magic);
    out.append(reinterpret_cast<const char*>(e.id.data()), e.id.size());
    put_be(out, e.attempts, 4);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(e.enqueued_at.time_since_epoch()).count();
    put_be(out, static_cast<std::uint64_t>(std::max<std::int64_t>(ms, 0)), 8);
    out.append(e.payload);
    return out;
}

std::optional<envelope> decode_envelope(std::string_view wire) {
    if (wire.size() < envelope_header_size || wire.substr(0, envelope_magic.size()) != envelope_magic)
        return std::nullopt;
    envelope e;
    std::copy_n(reinterpret_cast<const std::uint8_t*>(wire.data()) + 4, e.id.size(), e.id.begin());
    e.attempts = static_cast<std::uint32_t>(get_be(wire, 20, 4));
    auto ms = get_be(wire, 24, 8);
    // Clamp so the conversion to system_clock's nanosecond rep cannot overflow.
    constexpr std::uint64_t max_ms = 9'000'000'000'000ULL;
    e.enqueued_at = std::chrono::system_clock::time_point(
        std::chrono::milliseconds(static_cast<std::int64_t>(std::min(ms, max_ms))));
    e.payload.assign(wire.substr(envelope_header_size));
    return e;
}

std::string to_hex(const message_id& id) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s;
    s.reserve(id.size() * 2);
    for (auto b : id) {
        s.push_back(digits[b >> 4]);
        s.push_back(digits[b & 0xf]);
    }
    return s;
}

}  // namespace redcoord
