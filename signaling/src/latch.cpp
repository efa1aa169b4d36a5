#include "wake_wait.hpp"

#include <redcoord/core/keys.hpp>
#include <redcoord/core/script.hpp>
#include <redcoord/signaling/latch.hpp>

namespace redcoord {

namespace {
// KEYS: count key. ARGV: decrement, channel, envelope header. Returns the count left, or an
// error when the latch does not exist.
const script count_down_script(R"lua(
local v = redis.call('GET', KEYS[1])
if not v then return redis.error_reply('ERR latch does not exist') end
v = tonumber(v)
if v <= 0 then return 0 end
v = v - tonumber(ARGV[1])
if v < 0 then v = 0 end
redis.call('SET', KEYS[1], v)
if v == 0 then redis.call('PUBLISH', ARGV[2], ARGV[3] .. 'open') end
return v
)lua");
}  // namespace

latch::latch(signal_hub& hub, std::string name, std::uint64_t count, latch_options opts)
    : hub_(hub), name_(std::move(name)), opts_(opts) {
    validate_name(name_, "latch name");
    if (opts_.recheck_interval.count() <= 0) throw invalid_argument("latch_options::recheck_interval must be > 0");
    key_ = make_key(hub_.options().prefix, "latch", name_);
    (void)hub_.master().command({"SET", key_, std::to_string(count), "NX"});
}

std::uint64_t latch::count_down(std::uint64_t n) {
    if (n == 0) throw invalid_argument("latch::count_down needs n >= 1");
    try {
        auto r = count_down_script.run(hub_.master(), {key_}, {std::to_string(n), key_, hub_.envelope({})});
        return static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.integer()));
    } catch (const reply_error& e) {
        if (std::string(e.what()).find("does not exist") != std::string::npos)
            throw error("latch '" + name_ + "' does not exist (its key was deleted)");
        throw;
    }
}

std::uint64_t latch::count() {
    auto v = hub_.master().command({"GET", key_}).maybe_text();
    if (!v) return 0;
    try {
        return std::stoull(*v);
    } catch (...) {
        throw protocol_error("latch '" + name_ + "' key holds a non-number");
    }
}

bool latch::wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto w = hub_.listen({key_});  // subscribe first, then read state, then wait
    auto open = [&] {
        auto v = hub_.master().command({"GET", key_}).maybe_text();
        return v && (*v == "0" || (!v->empty() && (*v)[0] == '-'));
    };
    for (;;) {
        if (open()) return true;
        const auto left = detail::remaining(deadline);
        if (left.count() == 0) return false;
        (void)w.wait(std::min(left, opts_.recheck_interval));
        while (w.try_wait()) {
        }
    }
}

void latch::reset(std::uint64_t count) { (void)hub_.master().command({"SET", key_, std::to_string(count)}); }

}  // namespace redcoord
