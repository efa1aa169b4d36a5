#pragma once
// The decisions of rw_lock's scripts, without a server: the same steps as lua/rwlock_*.lua over
// a model of the keys, so the unit tests' schedules check what the scripts decide. Times are
// microseconds on the server's clock.
//
// Each reader holds one lease: a member of the readers' sorted set scored by the server time
// it ends. The writer is one key with an expiry. A waiting writer registers an intent (a
// member of a second sorted set, scored by the end of its entry) that refuses new readers;
// the writer refreshes it at each attempt, so a dead writer's intent lapses by itself and
// holds readers back no longer than its entry's life. Every script first drops what ended.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace redcoord::detail {

enum class rw_mode {
    read,
    write
};

struct rw_state {
    std::map<std::string, std::int64_t> readers;  // token -> end of its lease (server us)
    std::optional<std::pair<std::string, std::int64_t>> writer;  // token, end of its lease
    std::map<std::string, std::int64_t> intents;  // waiting writer id -> end of its entry
    std::map<std::string, std::int64_t> waiting;  // waiting reader id -> end of its entry
    std::int64_t fence = 0;                       // the fencing counter (0: absent)
};

// Who asks: a caller that will wait names itself (one id per acquire call); "" for one that
// will not. A refused writer that waits registers its intent under that id.
struct rw_asker {
    std::string waiter_id;
    std::int64_t retry_us = 0;  // its longest sleep
    std::int64_t grace_us = 0;  // how long its entry outlives the sleep (time to wake and ask)
};

struct rw_acquired {
    bool acquired = false;
    std::int64_t fencing_token = 0;  // when acquired
    std::uint64_t readers = 0;       // live readers after the attempt
    // When refused: microseconds until what blocks this attempt ends if nobody releases first
    // (0: nothing known).
    std::int64_t next_free_us = 0;
};

// A share: refused while a writer holds or any writer's intent is live.
[[nodiscard]] rw_acquired rw_acquire_read(rw_state& s, std::int64_t now_us,
                                          const std::string& token, std::int64_t ttl_us,
                                          const rw_asker& who = {});
// The exclusive hold: refused while a writer or any reader holds; then the asker's intent is
// (re)registered when it waits. Other writers' intents do not refuse a writer.
[[nodiscard]] rw_acquired rw_acquire_write(rw_state& s, std::int64_t now_us,
                                           const std::string& token, std::int64_t ttl_us,
                                           const rw_asker& who = {});
// Releases `token`'s hold of `mode`; true when it was still held.
bool rw_release(rw_state& s, std::int64_t now_us, const std::string& token, rw_mode mode);
// Extends `token`'s lease of `mode` to now + ttl iff it is still live. True when extended.
bool rw_extend(rw_state& s, std::int64_t now_us, const std::string& token, rw_mode mode,
               std::int64_t ttl_us);
// A waiter that gives up withdraws its intent or waiting entry.
void rw_leave(rw_state& s, const std::string& waiter_id);

// What the invariant counts at `now_us`.
[[nodiscard]] std::uint64_t rw_live_readers(const rw_state& s, std::int64_t now_us);
[[nodiscard]] bool rw_live_writer(const rw_state& s, std::int64_t now_us);

}  // namespace redcoord::detail
