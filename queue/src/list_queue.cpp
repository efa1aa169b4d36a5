#include <redcoord/queue/list_queue.hpp>

#include <redcoord/core/deadline.hpp>

#include "payload_checks.hpp"
#include "seconds_arg.hpp"

namespace redcoord {

using std::chrono::milliseconds;

list_queue::list_queue(connection_pool& pool, std::string_view name, list_queue_options opts)
    : pool_(pool), order_(opts.order), max_payload_(opts.max_payload) {
    validate_name(name, "queue name");
    detail::validate_max_payload(max_payload_, "list_queue");
    key_ = make_key(opts.prefix, "queue", name);
}

void list_queue::push(std::string_view payload) {
    const std::string one[] = {std::string(payload)};
    push_batch(one);
}

void list_queue::push_batch(std::span<const std::string> payloads) {
    if (payloads.empty()) return;
    detail::check_payloads(payloads, max_payload_, "list_queue");
    std::vector<std::string_view> argv;
    argv.reserve(payloads.size() + 2);
    argv.emplace_back("LPUSH");
    argv.emplace_back(key_);
    for (const auto& p : payloads) argv.emplace_back(p);
    auto c = pool_.borrow_for(key_);
    try {
        c->command(std::span<const std::string_view>(argv));
    } catch (const reply_error& e) {
        detail::poison_if_desynchronised(*c, e);
        throw;
    }
}

std::optional<std::string> list_queue::pop(milliseconds timeout) {
    auto c = pool_.borrow_for(key_);
    // A waiting message is taken with a plain RPOP/LPOP; only an empty list needs the
    // blocking command (and its longer reply deadline).
    auto now = c->command({order_ == queue_order::fifo ? "RPOP" : "LPOP", key_}).maybe_text();
    if (now || timeout < milliseconds(1)) return now;
    // Saturating: pop(milliseconds::max()) waits "forever" instead of overflowing.
    const auto deadline = deadline_after(timeout);
    const std::string_view cmd = order_ == queue_order::fifo ? "BRPOP" : "BLPOP";
    for (;;) {
        const auto left = time_left(deadline);
        if (left < milliseconds(1)) return std::nullopt;
        // Bounded blocks keep the seconds argument and the reply deadline finite.
        const auto block = std::min(left, max_block);
        const std::string secs = detail::seconds_arg(block);
        const std::string_view argv[] = {cmd, key_, secs};
        reply r =
            c->command_for(detail::blocking_deadline(block, c->where().command_timeout), argv);
        // BRPOP answers [key, value] or nil on timeout.
        if (!r.is_nil()) return r.elements().at(1).text();
    }
}

std::optional<std::string> list_queue::try_pop() {
    auto c = pool_.borrow_for(key_);
    return c->command({order_ == queue_order::fifo ? "RPOP" : "LPOP", key_}).maybe_text();
}

std::size_t list_queue::size() {
    return static_cast<std::size_t>(pool_.command({"LLEN", key_}).integer());
}

}  // namespace redcoord
