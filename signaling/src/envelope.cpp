#include <redcoord/core/detail/bytes.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/signaling/envelope.hpp>

#include <algorithm>

namespace redcoord::detail {

std::string envelope_header(std::uint64_t origin, std::uint64_t seq) {
    std::string h;
    h.reserve(envelope_overhead);
    h.append(envelope_magic);
    put_be<8>(h, origin);
    put_be<8>(h, seq);
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

dedup_window::dedup_window(std::size_t capacity, std::size_t max_origins)
    : capacity_(capacity), max_origins_(max_origins) {
    if (capacity_ == 0) throw invalid_argument("dedup window must hold at least one id");
    if (max_origins_ == 0) throw invalid_argument("dedup window must track at least one origin");
}

bool dedup_window::first_copy(std::string_view id, std::string_view channel,
                              std::string_view pattern) {
    if (id.size() != envelope_id_size) throw invalid_argument("dedup_window: not an envelope id");
    const std::uint64_t origin = get_be<8>(id, 0), seq = get_be<8>(id, 8);
    if (auto f = floors_.find(origin); f != floors_.end() && seq <= f->second.seq) return false;
    std::string key;
    key.reserve(id.size() + channel.size() + pattern.size() + 2);
    key.append(id).append(1, '\0').append(channel).append(1, '\0').append(pattern);
    if (set_.count(key)) return false;
    if (order_.size() >= capacity_) forget_oldest();
    set_.insert(key);
    order_.push_back({std::move(key), origin, seq});
    return true;
}

void dedup_window::forget_oldest() {
    entry& e = order_.front();
    raise_floor(e.origin, e.seq);
    set_.erase(e.key);
    order_.pop_front();
}

void dedup_window::raise_floor(std::uint64_t origin, std::uint64_t seq) {
    auto [it, fresh] = floors_.try_emplace(origin, floor{seq, ++updates_});
    if (!fresh) {
        it->second.seq = std::max(it->second.seq, seq);
        it->second.touched = updates_;
        return;
    }
    if (floors_.size() <= max_origins_) return;
    // Rare (only past max_origins publishers), so a linear scan is cheaper than an LRU list.
    auto stalest = floors_.begin();
    for (auto f = floors_.begin(); f != floors_.end(); ++f)
        if (f->second.touched < stalest->second.touched) stalest = f;
    floors_.erase(stalest);
}

}  // namespace redcoord::detail
