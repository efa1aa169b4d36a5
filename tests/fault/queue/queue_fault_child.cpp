// A consumer process for the fault test: runs a queue_worker whose handler records each
// job it processes (HINCRBY done <job> 1, RPUSH log "<job>|<consumer>") and then acks it.
// It is SIGKILLed at random points; SIGTERM stops it gracefully.
//
// Each job takes about <work-us> microseconds, half before recording it and half after (before
// the ack), so a kill can land before, inside or after the work.
//
// usage: queue_fault_child <redis-url> <queue> <consumer-id> <threads> <visibility-ms> <work-us>

#include <redcoord/core/endpoint.hpp>
#include <redcoord/queue/queue_worker.hpp>

#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

namespace {
volatile std::sig_atomic_t stop_requested = 0;
void on_term(int) { stop_requested = 1; }
}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s url queue consumer threads visibility-ms work-us\n",
                     argv[0]);
        return 2;
    }
    std::signal(SIGTERM, on_term);
    const std::string consumer = argv[3];
    const auto threads = static_cast<std::size_t>(std::stoul(argv[4]));
    const std::chrono::milliseconds visibility(std::stol(argv[5]));
    const std::chrono::microseconds half_work(std::stol(argv[6]) / 2);
    auto ep = redcoord::parse_endpoint(argv[1]);
    // Generous: a handler whose recording timed out after the server applied it would throw,
    // be retried, and count as a duplicate that no kill caused.
    ep.command_timeout = std::chrono::seconds(10);
    redcoord::connection_pool pool(ep, {.max_size = threads + 4});
    redcoord::reliable_queue q(pool, argv[2],
                               {.consumer_id = consumer,
                                .visibility_timeout = visibility,
                                .heartbeat_interval = visibility / 20,
                                .recover_interval = visibility / 8});
    redcoord::queue_worker w(
        q,
        [&](const redcoord::delivery& d) {
            std::this_thread::sleep_for(half_work);
            auto c = pool.borrow();
            auto r = c->pipeline({{"HINCRBY", "done", d.payload, "1"},
                                  {"RPUSH", "log",
                                   d.payload + "|" + consumer + "|" + std::to_string(d.attempts) +
                                       "|" + d.consumer}});
            for (auto& x : r)
                if (x.is_error()) throw std::runtime_error(x.text());
            c.reset();
            std::this_thread::sleep_for(half_work);
            return redcoord::handler_result::ack;
        },
        {.threads = threads, .poll_timeout = std::chrono::milliseconds(100)});
    w.start();
    std::printf("consumer %s started\n", consumer.c_str());
    std::fflush(stdout);
    while (!stop_requested) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    w.stop();
    q.close();
    auto s = w.stats();
    std::printf(
        "consumer %s stopped as %s: acked %llu requeued %llu lost %llu errors %llu heartbeat "
        "failures %llu\n",
        consumer.c_str(), q.consumer_id().c_str(), static_cast<unsigned long long>(s.acked),
        static_cast<unsigned long long>(s.requeued), static_cast<unsigned long long>(s.lost_leases),
        static_cast<unsigned long long>(s.errors),
        static_cast<unsigned long long>(q.heartbeat_failures()));
    return s.lost_leases == 0 && s.requeued == 0 ? 0 : 3;
}
