// `redcoord queue push|pop|ack|nack|stats|recover|dead NAME ...` over reliable_queue.
//
// Pop and ack run in different processes, so a delivery is named by a printable id,
// `<consumer>/<message id>`: the consumer whose processing list holds the message and the
// message's 32-hex-digit id. ack/nack find the exact element in that processing list again.
// A popped message stays in flight while the consumer's heartbeat lives: each pop renews it
// for --visibility; after that any `recover` (or any consumer's pop) returns it to the queue.
#include "context.hpp"
#include "exit_codes.hpp"
#include "os_signals.hpp"
#include "payloads.hpp"

#include <redcoord/core/detail/refusal.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/queue/envelope.hpp>
#include <redcoord/queue/reliable_queue.hpp>

#include <unistd.h>

#include <cstdio>
#include <memory>

namespace redcoord::cli {
namespace {

using std::chrono::milliseconds;

struct queue_args {
    std::string name;
    payload_input input;             // push
    bool base64 = false;             // pop, dead: print payloads in base64
    std::string consumer;            // pop (default random), ack/nack (or inside the id)
    std::string delivery;            // ack/nack
    milliseconds timeout{0};         // pop
    milliseconds visibility{30000};  // pop
    std::uint32_t max_attempts = default_max_attempts;  // nack/recover/pop
    bool dead = false;                                  // nack --dead
    std::optional<std::size_t> limit;  // dead: listing 100, --requeue all unless given
    bool requeue = false;              // dead --requeue
};

reliable_queue_options queue_options(const context& ctx, const queue_args& a) {
    reliable_queue_options o;
    o.prefix = ctx.opts.prefix;
    o.max_attempts = a.max_attempts;
    o.visibility_timeout = a.visibility;
    o.heartbeat_interval = std::max(milliseconds(1), a.visibility / 3);
    o.recover_interval = milliseconds(0);
    if (!a.consumer.empty()) o.consumer_id = a.consumer;
    return o;
}

std::string delivery_id(const std::string& consumer, const std::string& message_id) {
    return consumer + "/" + message_id;
}

// An anonymous `pop` (no --consumer) names its consumer `cli-` + 40 hex digits; such a
// consumer lives for one delivery, so its ack retires it.
bool is_anonymous(std::string_view consumer) {
    constexpr std::string_view mark = "cli-";
    if (consumer.size() != mark.size() + 40 || consumer.substr(0, mark.size()) != mark)
        return false;
    return consumer.substr(mark.size()).find_first_not_of("0123456789abcdef") ==
           std::string_view::npos;
}

std::string shown(const queue_args& a, const std::string& payload) {
    return a.base64 ? base64_encode(payload) : payload;
}

std::string message_json(const queue_args& a, const message& m) {
    return json_object()
        .add("id", m.id)
        .add("payload", shown(a, m.payload))
        .add("attempts", static_cast<std::uint64_t>(m.attempts))
        .add(
            "enqueued_at_ms",
            static_cast<std::int64_t>(
                std::chrono::duration_cast<milliseconds>(m.enqueued_at.time_since_epoch()).count()))
        .str();
}

int run_push(context& ctx, const queue_args& a) {
    exit_on_termination_signal();
    const auto payloads = read_payloads(a.input);
    connection_pool pool(ctx.single_endpoint("queue push"));
    reliable_queue q(pool, a.name, queue_options(ctx, a));
    const auto ids = q.push_batch(payloads);
    if (ctx.opts.json) {
        std::vector<std::string> quoted;
        quoted.reserve(ids.size());
        for (const auto& id : ids) quoted.push_back(json_quote(id));
        print_line(json_object().add("name", a.name).add_raw("ids", json_array(quoted)).str());
    } else {
        for (const auto& id : ids) print_line(id);
    }
    return ok;
}

int run_pop(context& ctx, const queue_args& a) {
    exit_on_termination_signal();
    queue_args args = a;
    const bool anonymous = args.consumer.empty();
    if (anonymous) args.consumer = "cli-" + random_token();
    // Leaked on purpose and left by _exit: reliable_queue::close() (run by its destructor)
    // would hand the delivery straight back to the queue, but the delivery must stay in
    // flight for a later `queue ack` until the consumer's heartbeat (--visibility) runs out.
    auto* pool = new connection_pool(ctx.single_endpoint("queue pop"));
    auto* q = new reliable_queue(*pool, args.name, queue_options(ctx, args));
    int code = ok;
    try {
        auto d = q->pop(args.timeout);
        if (!d) {
            if (ctx.opts.json)
                print_line(json_object().add("name", args.name).add("empty", true).str());
            else if (args.timeout > milliseconds(0))
                print_note("no message in queue '" + args.name + "' within " +
                           format_duration(args.timeout));
            else
                print_note("queue '" + args.name + "' is empty");
            code = args.timeout > milliseconds(0) ? timed_out : no;
            // Nothing is in flight: an anonymous consumer has no reason to stay registered.
            if (anonymous) {
                delete q;
                delete pool;
            }
        } else {
            const std::string id = delivery_id(d->consumer, d->id);
            if (ctx.opts.json) {
                print_line(json_object()
                               .add("delivery", id)
                               .add("consumer", d->consumer)
                               .add("id", d->id)
                               .add("payload", shown(args, d->payload))
                               .add("attempts", static_cast<std::uint64_t>(d->attempts))
                               .add("raw", d->raw)
                               .str());
            } else {
                print_line(id + " " + shown(args, d->payload));
            }
        }
    } catch (const std::exception& e) {
        print_note(std::string("error: ") + e.what());
        code = exit_code_for(e);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(code);
}

/// Finds the delivery named by `id` (`consumer/message-id`, or a bare message id with
/// --consumer) in the consumer's processing list.
std::optional<delivery> find_delivery(connection_pool& pool, const context& ctx,
                                      const queue_args& a) {
    std::string consumer = a.consumer, mid = a.delivery;
    if (const auto slash = a.delivery.rfind('/'); slash != std::string::npos) {
        consumer = a.delivery.substr(0, slash);
        mid = a.delivery.substr(slash + 1);
    }
    if (consumer.empty())
        throw invalid_argument(
            "delivery id must be CONSUMER/ID (as printed by pop), or give --consumer");
    if (mid.empty()) throw invalid_argument("empty message id in delivery '" + a.delivery + "'");
    queue_args view = a;
    view.consumer = consumer;
    reliable_queue q(pool, a.name, queue_options(ctx, view));  // never pops: starts no thread
    const reply r = pool.command({"LRANGE", q.processing_key(), "0", "-1"});
    if (r.is_error()) detail::throw_reply_error(r.text(), "LRANGE");
    for (const auto& e : r.elements()) {
        const std::string& element = e.text();
        if (auto env = decode_envelope(element); env && to_hex(env->id) == mid) {
            delivery d;
            d.id = mid;
            d.payload = env->payload;
            d.attempts = env->attempts;
            d.consumer = consumer;
            d.element = element;
            return d;
        }
    }
    return std::nullopt;
}

int run_ack(context& ctx, const queue_args& a, bool is_ack) {
    exit_on_termination_signal();
    connection_pool pool(ctx.single_endpoint(is_ack ? "queue ack" : "queue nack"));
    auto d = find_delivery(pool, ctx, a);
    bool done = false;
    if (d) {
        queue_args view = a;
        view.consumer = d->consumer;
        reliable_queue q(pool, a.name, queue_options(ctx, view));
        done = is_ack ? q.ack(*d)
                      : q.nack(*d, a.dead ? nack_action::dead_letter : nack_action::requeue);
        // Tidying only: when it fails, the consumer's heartbeat lapses and recovery removes it.
        if (done && is_anonymous(d->consumer)) {
            try {
                (void)q.retire_if_idle();
            } catch (const std::exception&) {}
        }
    }
    if (ctx.opts.json)
        print_line(
            json_object().add("delivery", a.delivery).add(is_ack ? "acked" : "nacked", done).str());
    else if (!done)
        print_note("delivery '" + a.delivery +
                   "' is not in flight (already acked, or recovered after its visibility timeout)");
    return done ? ok : no;
}

int run_stats(context& ctx, const queue_args& a) {
    exit_on_termination_signal();
    connection_pool pool(ctx.single_endpoint("queue stats"));
    reliable_queue q(pool, a.name, queue_options(ctx, a));
    const auto s = q.stats();
    std::size_t in_flight = 0;
    for (const auto& [c, n] : s.in_flight) in_flight += n;
    if (ctx.opts.json) {
        json_object per;
        for (const auto& [c, n] : s.in_flight) per.add(c, static_cast<std::uint64_t>(n));
        std::vector<std::string> expired;
        for (const auto& c : s.expired) expired.push_back(json_quote(c));
        print_line(json_object()
                       .add("name", a.name)
                       .add("ready", static_cast<std::uint64_t>(s.ready))
                       .add("in_flight", static_cast<std::uint64_t>(in_flight))
                       .add("dead", static_cast<std::uint64_t>(s.dead))
                       .add_raw("consumers", per.str())
                       .add_raw("expired", json_array(expired))
                       .str());
    } else {
        print_line("ready " + std::to_string(s.ready));
        print_line("in_flight " + std::to_string(in_flight));
        print_line("dead " + std::to_string(s.dead));
        for (const auto& [c, n] : s.in_flight)
            print_line("consumer " + c + " " + std::to_string(n));
        for (const auto& c : s.expired) print_line("expired " + c);
    }
    return ok;
}

int run_recover(context& ctx, const queue_args& a) {
    exit_on_termination_signal();
    connection_pool pool(ctx.single_endpoint("queue recover"));
    reliable_queue q(pool, a.name, queue_options(ctx, a));
    const auto r = q.recover();
    if (ctx.opts.json) {
        print_line(json_object()
                       .add("name", a.name)
                       .add("requeued", static_cast<std::uint64_t>(r.requeued))
                       .add("dead_lettered", static_cast<std::uint64_t>(r.dead_lettered))
                       .add("consumers", static_cast<std::uint64_t>(r.consumers))
                       .str());
    } else {
        print_line("requeued " + std::to_string(r.requeued));
        print_line("dead_lettered " + std::to_string(r.dead_lettered));
        print_line("consumers " + std::to_string(r.consumers));
    }
    return ok;
}

int run_dead(context& ctx, const queue_args& a) {
    exit_on_termination_signal();
    connection_pool pool(ctx.single_endpoint("queue dead"));
    reliable_queue q(pool, a.name, queue_options(ctx, a));
    if (a.requeue) {
        const std::size_t n = q.requeue_dead(a.limit.value_or(0));
        if (ctx.opts.json)
            print_line(json_object()
                           .add("name", a.name)
                           .add("requeued", static_cast<std::uint64_t>(n))
                           .str());
        else
            print_line(std::to_string(n));
        return ok;
    }
    for (const auto& m : q.dead_letters(a.limit.value_or(default_listing_limit))) {
        if (ctx.opts.json)
            print_line(message_json(a, m));
        else
            print_line(m.id + " " + std::to_string(m.attempts) + " " + shown(a, m.payload));
    }
    return ok;
}

}  // namespace

void add_queue_commands(CLI::App& app, context& ctx) {
    auto* queue = app.add_subcommand(
        "queue", "Reliable work queue: push, pop, ack, nack, stats, recover, dead");
    queue->require_subcommand(1);
    queue->footer(
        "pop prints 'DELIVERY PAYLOAD' where DELIVERY is CONSUMER/ID; pass DELIVERY to ack or "
        "nack, from\n"
        "any process, while the consumer's heartbeat lives (--visibility, renewed by each pop of "
        "the same\n"
        "--consumer). After that, recover (or any consumer's first pop) returns the message to the "
        "queue.");
    const auto make = [&](const std::string& verb, const std::string& help) {
        auto a = std::make_shared<queue_args>();
        auto* sub = queue->add_subcommand(verb, help);
        sub->add_option("name", a->name, "Queue name")->required();
        return std::make_pair(sub, a);
    };

    {
        auto [sub, a] = make("push", "Push payloads (one message each); prints their ids");
        add_payload_options(*sub, a->input);
        sub->footer(
            "PAYLOAD '-' reads one payload from stdin, --file F one from a file, byte for byte "
            "(a 2 MB\n"
            "payload does not fit a command line). JSON: {\"name\",\"ids\":[...]}.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_push(ctx, *a); }; });
    }
    {
        auto [sub, a] = make("pop", "Take the oldest message into this consumer's processing list");
        sub->add_option("--consumer", a->consumer,
                        "Consumer id (default: a new random id, printed in DELIVERY)");
        add_duration(
            *sub, "--timeout", a->timeout,
            "Wait this long for a message; exit 124 when none came (0: exit 1 when empty)");
        add_duration(*sub, "--visibility", a->visibility,
                     "Visibility timeout: how long the delivery stays in flight");
        sub->add_option("--max-attempts", a->max_attempts,
                        "Deliveries before a message is dead-lettered")
            ->capture_default_str();
        sub->add_flag("--base64", a->base64, "Print the payload in base64 (binary payloads)");
        sub->footer(
            "Output: 'CONSUMER/ID PAYLOAD'; 'queue NAME is empty' on stderr, exit 1 (124 with "
            "--timeout).\n"
            "Without --consumer the consumer is anonymous (cli-<40 hex digits>): an empty pop "
            "leaves no\n"
            "consumer behind, and the ack or nack of its delivery retires it. JSON: "
            "{\"delivery\",\"consumer\",\"id\",\"payload\",\"attempts\",\"raw\"}.");
        sub->callback([a = a, &ctx] {
            if (a->visibility < milliseconds(100))
                throw CLI::ValidationError("--visibility", "must be >= 100ms");
            ctx.run = [a, &ctx] { return run_pop(ctx, *a); };
        });
    }
    for (const bool is_ack : {true, false}) {
        auto [sub, a] =
            make(is_ack ? "ack" : "nack",
                 is_ack ? "Acknowledge a delivery (exit 1: no longer in flight)"
                        : "Give a delivery back: requeue it, or --dead to dead-letter it");
        sub->add_option("delivery", a->delivery, "DELIVERY as printed by pop (CONSUMER/ID)")
            ->required();
        sub->add_option("--consumer", a->consumer, "Consumer, when DELIVERY is a bare message id");
        if (!is_ack) {
            sub->add_flag("--dead", a->dead, "Dead-letter it now instead of requeueing");
            sub->add_option("--max-attempts", a->max_attempts,
                            "Dead-letter once attempts reach this")
                ->capture_default_str();
        }
        sub->footer(is_ack ? "JSON: {\"delivery\",\"acked\"}."
                           : "JSON: {\"delivery\",\"nacked\"}.");
        sub->callback([a = a, &ctx, is_ack] {
            ctx.run = [a, &ctx, is_ack] { return run_ack(ctx, *a, is_ack); };
        });
    }
    {
        auto [sub, a] = make("stats", "Print ready, in-flight and dead counts");
        sub->footer(
            "JSON: "
            "{\"name\",\"ready\",\"in_flight\",\"dead\",\"consumers\":{id:n},\"expired\":[...]}.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_stats(ctx, *a); }; });
    }
    {
        auto [sub, a] =
            make("recover", "Return in-flight messages of consumers whose heartbeat expired");
        sub->add_option("--max-attempts", a->max_attempts, "Dead-letter once attempts reach this")
            ->capture_default_str();
        sub->footer("JSON: {\"name\",\"requeued\",\"dead_lettered\",\"consumers\"}.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_recover(ctx, *a); }; });
    }
    {
        auto [sub, a] =
            make("dead", "List dead letters ('ID ATTEMPTS PAYLOAD'), or --requeue them");
        sub->add_option("--limit", a->limit,
                        "At most this many, oldest first (0: all; --requeue: all unless given)")
            ->default_str(std::to_string(default_listing_limit));
        sub->add_flag("--requeue", a->requeue, "Move them back to the queue with attempts reset");
        sub->add_flag("--base64", a->base64, "Print payloads in base64 (binary payloads)");
        sub->footer(
            "JSON: one {\"id\",\"payload\",\"attempts\",\"enqueued_at_ms\"} per line, or "
            "{\"name\",\"requeued\"}.");
        sub->callback([a = a, &ctx] { ctx.run = [a, &ctx] { return run_dead(ctx, *a); }; });
    }
}

}  // namespace redcoord::cli
