#include <redcoord/queue/list_queue.hpp>

#include "seconds_arg.hpp"

namespace redcoord {

list_queue::list_queue(connection_pool& pool, std::string_view name, list_queue_options opts)
    : pool_(pool), order_(opts.order) {
    validate_name(name, "queue name");
    key_ = make_key(opts.prefix, "queue", name);
}

void list_queue::push(std::string_view payload) {
    auto c = pool_.borrow();
    c->command({"LPUSH", key_, payload});
}

void list_queue::push_batch(std::span<const std::string> payloads) {
    if (payloads.empty()) return;
    std::vector<std::string_view> argv;
    argv.reserve(payloads.size() + 2);
    argv.push_back("LPUSH");
    argv.push_back(key_);
    for (const auto& p : payloads) argv.push_back(p);
    auto c = pool_.borrow();
    c->command(std::span<const std::string_view>(argv));
}

std::optional<std::string> list_queue::pop(std::chrono::milliseconds timeout) {
    auto c = pool_.borrow();
    // A waiting message is taken with a plain RPOP/LPOP; only an empty list needs the
    // blocking command (and its longer reply deadline).
    auto now = c->command({order_ == queue_order::fifo ? "RPOP" : "LPOP", key_}).maybe_text();
    if (now || timeout < std::chrono::milliseconds(1)) return now;
    const std::string secs = detail::seconds_arg(timeout);
    const std::string_view cmd = order_ == queue_order::fifo ? "BRPOP" : "BLPOP";
    const std::string_view argv[] = {cmd, key_, secs};
    reply r = c->command_for(detail::blocking_deadline(timeout, c->where().command_timeout), argv);
    // BRPOP answers [key, value] or nil on timeout.
    if (r.is_nil()) return std::nullopt;
    return r.elements().at(1).text();
}

std::optional<std::string> list_queue::try_pop() {
    auto c = pool_.borrow();
    return c->command({order_ == queue_order::fifo ? "RPOP" : "LPOP", key_}).maybe_text();
}

std::size_t list_queue::size() {
    return static_cast<std::size_t>(pool_.command({"LLEN", key_}).integer());
}

}  // namespace redcoord
