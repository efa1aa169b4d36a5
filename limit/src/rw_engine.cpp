#include "rw_engine.hpp"

#include <algorithm>

namespace redcoord::detail {

namespace {

void drop_ended(rw_state& s, std::int64_t now_us) {
    std::erase_if(s.readers, [&](const auto& l) { return l.second <= now_us; });
    std::erase_if(s.intents, [&](const auto& w) { return w.second <= now_us; });
    std::erase_if(s.waiting, [&](const auto& w) { return w.second <= now_us; });
    if (s.writer && s.writer->second <= now_us) s.writer.reset();
}

std::int64_t latest_end(const std::map<std::string, std::int64_t>& m) {
    std::int64_t end = 0;
    for (const auto& e : m) end = std::max(end, e.second);
    return end;
}

// next_fence: a counter created anew starts at the server's time.
std::int64_t next_fence(rw_state& s, std::int64_t now_us) {
    s.fence = s.fence == 0 ? now_us : s.fence + 1;
    return s.fence;
}

}  // namespace

rw_acquired rw_acquire_read(rw_state& s, std::int64_t now_us, const std::string& token,
                            std::int64_t ttl_us, const rw_asker& who) {
    drop_ended(s, now_us);
    rw_acquired r;
    if (!s.writer && s.intents.empty()) {
        s.waiting.erase(who.waiter_id);
        s.readers[token] = now_us + ttl_us;
        r.acquired = true;
        r.fencing_token = next_fence(s, now_us);
        r.readers = s.readers.size();
        return r;
    }
    r.readers = s.readers.size();
    r.next_free_us = s.writer ? s.writer->second - now_us : latest_end(s.intents) - now_us;
    if (!who.waiter_id.empty())
        s.waiting[who.waiter_id] =
            now_us + (r.next_free_us > 0 ? r.next_free_us : who.retry_us) + who.grace_us;
    return r;
}

rw_acquired rw_acquire_write(rw_state& s, std::int64_t now_us, const std::string& token,
                             std::int64_t ttl_us, const rw_asker& who) {
    drop_ended(s, now_us);
    rw_acquired r;
    r.readers = s.readers.size();
    if (!s.writer && s.readers.empty()) {
        s.intents.erase(who.waiter_id);
        s.writer = {token, now_us + ttl_us};
        r.acquired = true;
        r.fencing_token = next_fence(s, now_us);
        return r;
    }
    r.next_free_us = s.writer ? s.writer->second - now_us : latest_end(s.readers) - now_us;
    // The intent lives one sleep (the waiter wakes at least every retry_us) plus the grace.
    if (!who.waiter_id.empty()) s.intents[who.waiter_id] = now_us + who.retry_us + who.grace_us;
    return r;
}

bool rw_release(rw_state& s, std::int64_t now_us, const std::string& token, rw_mode mode) {
    drop_ended(s, now_us);
    if (mode == rw_mode::read) return s.readers.erase(token) > 0;
    if (!s.writer || s.writer->first != token) return false;
    s.writer.reset();
    return true;
}

bool rw_extend(rw_state& s, std::int64_t now_us, const std::string& token, rw_mode mode,
               std::int64_t ttl_us) {
    drop_ended(s, now_us);
    if (mode == rw_mode::read) {
        const auto it = s.readers.find(token);
        if (it == s.readers.end()) return false;
        it->second = now_us + ttl_us;
        return true;
    }
    if (!s.writer || s.writer->first != token) return false;
    s.writer->second = now_us + ttl_us;
    return true;
}

void rw_leave(rw_state& s, const std::string& waiter_id) {
    s.intents.erase(waiter_id);
    s.waiting.erase(waiter_id);
}

std::uint64_t rw_live_readers(const rw_state& s, std::int64_t now_us) {
    return static_cast<std::uint64_t>(std::count_if(
        s.readers.begin(), s.readers.end(), [&](const auto& l) { return l.second > now_us; }));
}

bool rw_live_writer(const rw_state& s, std::int64_t now_us) {
    return s.writer && s.writer->second > now_us;
}

}  // namespace redcoord::detail
