#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/detail/snapshot.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>

#include "pool_access.hpp"

#include <charconv>

namespace redcoord::detail {

std::vector<reply> read_snapshot(connection_pool& pool,
                                 std::vector<std::vector<std::string>> reads) {
    if (reads.empty()) throw invalid_argument("read_snapshot: no reads");
    const std::size_t n = reads.size();
    std::vector<std::vector<std::string>> cmds;
    cmds.reserve(n + 2);
    cmds.push_back({"MULTI"});
    for (auto& r : reads) cmds.push_back(std::move(r));
    cmds.push_back({"EXEC"});
    // One transaction is one slot: on a cluster, the master of the first read's key.
    auto c = pool.borrow_for(routing_key(cmds[1]));
    auto replies = c->pipeline(cmds);
    if (replies.front().is_error()) throw_reply_error(replies.front().text(), "MULTI");
    // A read refused while queueing (unknown command, wrong arity, ACL) makes EXEC fail with
    // EXECABORT; the queueing reply says why, which is the more useful message.
    for (std::size_t i = 1; i <= n; ++i)
        if (replies[i].is_error()) throw_reply_error(replies[i].text(), cmds[i].front());
    const reply& exec = replies.back();
    if (exec.is_error()) throw_reply_error(exec.text(), "EXEC");
    if (!exec.is_array() || exec.elements().size() != n)
        throw protocol_error("read_snapshot: EXEC did not return one reply per read");
    return exec.elements();
}

std::chrono::microseconds server_time(const reply& time_reply) {
    auto number = [](const reply& e) {
        long long v = 0;
        const std::string& t = e.text();
        auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        if (ec != std::errc() || p != t.data() + t.size())
            throw protocol_error("TIME: not a number: " + t);
        return v;
    };
    if (!time_reply.is_array() || time_reply.elements().size() != 2 ||
        !time_reply.elements()[0].is_string() || !time_reply.elements()[1].is_string())
        throw protocol_error("TIME: unexpected reply shape");
    return std::chrono::seconds(number(time_reply.elements()[0])) +
           std::chrono::microseconds(number(time_reply.elements()[1]));
}

std::optional<std::chrono::milliseconds> ttl_of(const reply& pttl_reply) {
    if (!pttl_reply.is_integer()) throw protocol_error("PTTL: unexpected reply shape");
    if (pttl_reply.integer() < 0) return std::nullopt;
    return std::chrono::milliseconds(pttl_reply.integer());
}

std::optional<std::uint64_t> counter_of(const reply& r, std::string_view what) {
    const auto v = r.maybe_text();
    if (!v) return std::nullopt;
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (v->empty() || ec != std::errc() || p != v->data() + v->size())
        throw protocol_error(std::string(what) + " is not a counter: '" + v->substr(0, 40) + "'");
    return n;
}

}  // namespace redcoord::detail
