#include <redcoord/core/detail/bytes.hpp>
#include <redcoord/core/detail/sha1.hpp>
#include <redcoord/queue/envelope.hpp>
#include <redcoord/queue/limits.hpp>

#include <algorithm>

namespace redcoord {
namespace {

// Offsets of the wire layout (envelope.hpp).
constexpr std::size_t id_at = 4, attempts_at = 20, enqueued_at_offset = 24, length_at = 32,
                      check_at = 36;

using detail::get_be;
using detail::put_be;

// The first four bytes of SHA-1(magic | id | length): the Lua scripts compute the same with
// redis.sha1hex, so both sides recognise an envelope by the same rule. The attempts and time
// fields are left out on purpose: the scripts rewrite attempts in place.
std::uint32_t header_check(std::string_view wire) {
    std::string covered;
    covered.reserve(24);
    covered.append(wire.substr(0, attempts_at));
    covered.append(wire.substr(length_at, 4));
    const auto d = detail::sha1(covered);
    return (std::uint32_t(d[0]) << 24) | (std::uint32_t(d[1]) << 16) | (std::uint32_t(d[2]) << 8) |
           std::uint32_t(d[3]);
}

}  // namespace

std::string encode_envelope(const envelope& e) {
    if (e.payload.size() > 0xffffffffULL)
        throw payload_too_large("envelope: a payload must be shorter than 4 GiB");
    std::string out;
    out.reserve(envelope_header_size + e.payload.size());
    out.append(envelope_magic);
    out.append(reinterpret_cast<const char*>(e.id.data()), e.id.size());
    put_be<4>(out, e.attempts);
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(e.enqueued_at.time_since_epoch())
            .count();
    put_be<8>(out, static_cast<std::uint64_t>(std::max<std::int64_t>(ms, 0)));
    put_be<4>(out, e.payload.size());
    put_be<4>(out, header_check(out));
    out.append(e.payload);
    return out;
}

std::optional<envelope> decode_envelope(std::string_view wire) {
    if (wire.size() < envelope_header_size ||
        wire.substr(0, envelope_magic.size()) != envelope_magic)
        return std::nullopt;
    if (get_be<4>(wire, length_at) != wire.size() - envelope_header_size) return std::nullopt;
    if (get_be<4>(wire, check_at) != header_check(wire)) return std::nullopt;
    envelope e;
    std::copy_n(reinterpret_cast<const std::uint8_t*>(wire.data()) + id_at, e.id.size(),
                e.id.begin());
    e.attempts = static_cast<std::uint32_t>(get_be<4>(wire, attempts_at));
    auto ms = get_be<8>(wire, enqueued_at_offset);
    // Clamp so the conversion to system_clock's nanosecond rep cannot overflow.
    constexpr std::uint64_t max_ms = 9'000'000'000'000ULL;
    e.enqueued_at = std::chrono::system_clock::time_point(
        std::chrono::milliseconds(static_cast<std::int64_t>(std::min(ms, max_ms))));
    e.payload.assign(wire.substr(envelope_header_size));
    return e;
}

std::string to_hex(const message_id& id) { return detail::to_hex(id); }

}  // namespace redcoord
