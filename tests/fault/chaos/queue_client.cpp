// One reliable_queue client of a fault schedule, run in its own network namespace:
//   chaos_queue_client producer|consumer NAME LOG SECONDS VISIBILITY_MS URL
// Until SECONDS pass, a producer pushes messages whose payloads name them (NAME-n), a consumer
// pops, works a little and acks. Every push, delivery and ack goes to LOG as a history line
// (testing/history.hpp), flushed at once, so a client killed or paused at any point leaves a
// readable history. Messages are named by payload, not by the queue's envelope id: a push
// whose reply was lost has no envelope id to log, yet its message may be delivered.
#include "chaos_common.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/history.hpp>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

namespace h = redcoord::testing::history;
using namespace std::chrono;

namespace {

// The queue every client of a run shares.
constexpr const char* queue_name = "chaos";

// Producers outpace the three consumers, so the ready list always holds a backlog: a server
// that forgets it loses messages, and the final drain has something to find.
void produce(redcoord::reliable_queue& q, const std::string& name, chaos::history_log& log,
             steady_clock::time_point until) {
    chaos::numbered_writes(log, name, "push", until, milliseconds(1), milliseconds(4),
                           [&](const std::string& id) { (void)q.push(id); });
}

void consume(redcoord::reliable_queue& q, const std::string& name, chaos::history_log& log,
             steady_clock::time_point until) {
    std::mt19937 rng(std::random_device{}());
    while (steady_clock::now() < until) {
        const std::int64_t asked = h::monotonic_ns();
        std::optional<redcoord::delivery> d;
        try {
            d = q.pop(milliseconds(200));
        } catch (const std::exception&) {
            // Whatever the lost reply moved waits in a retired list that recovery returns.
            std::this_thread::sleep_for(milliseconds(20));
            continue;
        }
        if (!d) continue;
        log.write({name, "deliver", asked, h::monotonic_ns(), true, 0, 0, d->payload});
        std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(5, 25)(rng)));
        // The invocation is logged first, not ok (history.hpp: it may have removed the
        // message): a consumer killed after the server removed it but before it logged the
        // reply must not make the message look lost.
        h::event a{name, "ack", h::monotonic_ns(), 0, false, 0, 0, d->payload};
        a.end_ns = a.start_ns;
        log.write(a);
        try {
            // False: recovered after this consumer's lease lapsed; someone else delivers it.
            a.op = q.ack(*d) ? "ack" : "ack-missed";
            a.ok = a.op == "ack";
        } catch (const redcoord::outcome_unknown&) {
            // The queue retires this consumer's identity and recovery may hand the message to
            // another: a timeout is a cut as this consumer saw it, scheduled or not (a loaded
            // machine can hold a reply past the 300 ms command timeout).
            a.op = "cut";
            a.ok = true;
        } catch (const std::exception&) {
            a.op = "ack-refused";  // refused or unsent until the retries ran out: not removed
        }
        a.end_ns = h::monotonic_ns();
        log.write(a);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s producer|consumer NAME LOG SECONDS VISIBILITY_MS URL\n",
                     argv[0]);
        return 2;
    }
    const std::string role = argv[1], name = argv[2];
    chaos::history_log log(argv[3]);
    if (!log.open()) return 2;
    const auto until = steady_clock::now() + seconds(std::stoi(argv[4]));
    redcoord::connection_pool pool(chaos::quick_endpoint(argv[6]));
    redcoord::reliable_queue_options o;
    o.consumer_id = name;
    o.visibility_timeout = milliseconds(std::stoll(argv[5]));
    o.heartbeat_interval = o.visibility_timeout / 4;
    o.recover_interval = o.visibility_timeout / 3;
    o.max_attempts = 1000;  // redeliveries under faults are the point; no dead letters
    redcoord::reliable_queue q(pool, queue_name, o);
    if (role == "producer")
        produce(q, name, log, until);
    else
        consume(q, name, log, until);
    return 0;
}
