#include <redcoord/core/errors.hpp>
#include <redcoord/signaling/envelope.hpp>

namespace redcoord::detail {

namespace {
void put_be64(std::string& out, std::uint64_t v) {
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}
}  // namespace

std::string envelope_header(std::uint64_t origin, std::uint64_t seq) {
    std::string h;
    h.reserve(envelope_overhead);
    h.append(envelope_magic);
    put_be64(h, origin);
    put_be64(h, seq);
    return h;
}

std::optional<opened_envelope> open_envelope(std::string_view wire) noexcept {
    if (wire.size() < envelope_overhead || wire.substr(0, envelope_magic.size()) != envelope_magic)
        return std::nullopt;
    return opened_envelope{wire.substr(envelope_magic.size(), envelope_id_size),
                           wire.substr(envelope_overhead)};
}

recent_ids::recent_ids(std::size_t capacity) : capacity_(capacity) {
    if (capacity_ == 0) throw invalid_argument("dedup window must hold at least one id");
}

bool recent_ids::insert(std::string id) {
    if (set_.count(id)) return false;
    if (order_.size() >= capacity_) {
        set_.erase(order_.front());
        order_.pop_front();
    }
    order_.push_back(id);
    set_.insert(std::move(id));
    return true;
}

dedup_window::dedup_window(std::size_t capacity, std::size_t) : recent_(capacity) {}

bool dedup_window::first_copy(std::string_view id, std::string_view channel, std::string_view pattern) {
    (void)channel;
    std::string key(id);
    if (!pattern.empty()) key.append(1, '\0').append(pattern);
    return recent_.insert(std::move(key));
}

}  // namespace redcoord::detail
