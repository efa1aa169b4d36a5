#include "subscriber_link.hpp"

namespace redcoord::detail {
namespace {

// The link whose handler the calling thread is running, if any (a destructor called from a
// handler must not wait for that handler).
thread_local const subscriber_link* running_handler_of = nullptr;

struct running_handler {
    const subscriber_link* saved;
    explicit running_handler(const subscriber_link* l) noexcept : saved(running_handler_of) {
        running_handler_of = l;
    }
    ~running_handler() { running_handler_of = saved; }
    running_handler(const running_handler&) = delete;
    running_handler& operator=(const running_handler&) = delete;
};

std::int64_t now_ns() noexcept {
    return std::chrono::steady_clock::now().time_since_epoch().count();
}

link_policy::settings policy_settings(const subscriber_options& o) noexcept {
    return {o.reconnect_min, o.reconnect_max, o.health_interval, o.tuning.drain_interval};
}

subscriber_options without_runtime(subscriber_options o) {
    o.runtime.reset();
    return o;
}

}  // namespace

subscriber_link::subscriber_link(endpoint e, subscriber::message_handler on_message,
                                 subscriber_options o, subscriber::state_handler on_state,
                                 std::shared_ptr<master_source> sentinel)
    : ep(std::move(e)), opts(without_runtime(o)), resolver(std::move(sentinel)),
      on_message(std::move(on_message)), on_state(std::move(on_state)), book(o.sharded),
      policy(policy_settings(o)) {}

bool subscriber_link::in_own_handler() const noexcept { return running_handler_of == this; }

void subscriber_link::deliver(const pubsub_message& m) {
    if (closed.load() || !on_message) return;
    running_handler guard(this);
    try {
        on_message(m);
    } catch (...) {
        // A throwing handler must not kill the reader; the caller reports its own errors.
    }
}

void subscriber_link::notify_state(bool up) {
    if (closed.load() || !on_state) return;
    running_handler guard(this);
    try {
        on_state(up);
    } catch (...) {}
}

void subscriber_link::told_refused() {
    if (closed.load() || !opts.tuning.on_refused) return;
    try {
        opts.tuning.on_refused();
    } catch (...) {}
}

void subscriber_link::handle(const reply& r) {
    if (r.is_error()) {
        // E.g. NOPERM for a channel the ACL user may not access: the names it refused stop
        // being wanted (resubscribing would only be refused again) and their waiters return.
        bool refused = false;
        {
            lock_guard lk(mu);
            refused = !book.error(r.text()).empty();
            cv.notify_all();
        }
        if (refused) told_refused();
        return;
    }
    if (r.is_status()) {  // +PONG: the reply to a health PING while nothing is subscribed
        lock_guard lk(mu);
        book.ponged();
        return;
    }
    if (!r.is_array() || r.elements().empty() || !r.elements()[0].is_string()) return;
    const auto& e = r.elements();
    const std::string& kind = e[0].text();
    if ((kind == "message" || kind == "smessage") && e.size() >= 3) {
        deliver(pubsub_message{e[1].text(), {}, e[2].text()});
    } else if (kind == "pmessage" && e.size() >= 4) {
        deliver(pubsub_message{e[2].text(), e[1].text(), e[3].text()});
    } else if (kind == "subscribe" || kind == "psubscribe" || kind == "unsubscribe" ||
               kind == "punsubscribe" || kind == "ssubscribe" || kind == "sunsubscribe") {
        if (e.size() < 2 || e[1].is_nil()) return;
        bool refused = false;
        {
            lock_guard lk(mu);
            refused = book.confirmed(kind, e[1].text());
            cv.notify_all();
        }
        if (refused) told_refused();
    } else if (kind == "pong") {
        lock_guard lk(mu);
        book.ponged();
    }
}

bool subscriber_link::read_available() {
    const bool got = conn->read_if_ready([&](reply& r) {
        read_mu.assert_held();  // the analysis does not carry the caller's locks into lambdas
        handle(r);
        return true;
    });
    if (got) last_data_ns.store(now_ns(), std::memory_order_relaxed);
    return got;
}

bool subscriber_link::help_read(bool& failed) noexcept {
    failed = false;
    unique_lock rl(read_mu, try_to_lock);
    if (!rl.owns_lock() || !conn || helper_failed || closed.load()) return false;
    try {
        return read_available();
    } catch (...) {
        // The reader owns reconnecting: the caller tells it.
        helper_failed = true;
        failed = true;
        return false;
    }
}

void subscriber_link::append(const std::vector<std::string>& cmd) {
    std::vector<std::string_view> v(cmd.begin(), cmd.end());
    conn->append(v);
}

bool subscriber_link::flush_some() {
    // Never blocks: one reader serves every link, so a server that stopped reading (paused,
    // or its socket buffers full) must not stall the others. What the socket does not take
    // now stays in hiredis's buffer until poll() reports the socket writable.
    return conn->send_buffered(false);
}

}  // namespace redcoord::detail
