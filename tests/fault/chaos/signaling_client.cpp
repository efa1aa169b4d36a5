// One signaling client of a fault schedule, run in its own network namespace:
//   chaos_signaling_client publisher|member NAME LOG SECONDS PARTIES MASTER_URL REPLICA_URL
// A publisher broadcasts signals named NAME-n on channel "chaos" until SECONDS pass. A member
// listens on "chaos" over the master and the replica, and for SECONDS + a drain keeps
// receiving; meanwhile a second thread of it is a party of the barrier "chaos" of PARTIES.
// Every signal, receipt, arrival and pass goes to LOG as a history line (testing/history.hpp).
// A member also logs `subscribed` once both links confirmed its subscription: the schedule
// derives its link-up intervals from that and from the faults it applied (signaling_schedule).
//
// CHAOS_MODE=plain breaks the run on purpose: the publisher sends plain PUBLISH commands
// without the hub's envelope, which the hub cannot de-duplicate (one copy per link).
#include "chaos_common.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/signaling/barrier.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/testing/history.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

namespace h = redcoord::testing::history;
using namespace std::chrono;

namespace {

constexpr const char* channel = "chaos";
// How long members keep receiving after the publisher stopped: signals held up by a cut link
// (TCP retransmits after the heal) still arrive.
constexpr seconds drain{3};

void publish(redcoord::signal_hub& hub, redcoord::connection_pool& pool, const std::string& name,
             chaos::history_log& log, steady_clock::time_point until) {
    const char* mode = std::getenv("CHAOS_MODE");
    const bool plain = mode && std::string(mode) == "plain";
    chaos::numbered_writes(log, name, "signal", until, milliseconds(10), milliseconds(30),
                           [&](const std::string& id) {
                               if (plain)
                                   (void)pool.command({"PUBLISH", channel, id});
                               else
                                   (void)hub.broadcast(channel, id);
                           });
}

// An arrival whose reply was lost still counts until its lease lapses; a member arrives again
// at once, and the barrier resumes that arrival rather than count the member twice (the
// retry rule of barrier.hpp, which this schedule exercises).
constexpr milliseconds arrival_lease{1000};

void arrive_repeatedly(redcoord::signal_hub& hub, std::size_t parties, const std::string& name,
                       chaos::history_log& log, steady_clock::time_point until) {
    redcoord::barrier_options o;
    o.arrival_lease = arrival_lease;
    redcoord::barrier b(hub, channel, parties, o);
    std::mt19937 rng(std::random_device{}());
    while (steady_clock::now() < until) {
        std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(0, 20)(rng)));
        // Logged at the call: the earliest it can have counted, so the checker never sees an
        // arrival later than it was.
        std::uint64_t open = 0;
        try {
            open = b.generation();
        } catch (const std::exception&) {
            continue;  // the master is away; nothing arrived
        }
        const std::int64_t called = h::monotonic_ns();
        try {
            const auto gen = b.arrive_and_wait(seconds(2));
            log.write({name, "arrive", called, called, true, gen, 0, ""});
            log.write({name, "pass", called, h::monotonic_ns(), true, gen, 0, ""});
        } catch (const redcoord::barrier_timeout&) {
            // Withdrawn: it did not count.
        } catch (const redcoord::barrier_lease_lost&) {
            // Lapsed before the generation passed: it did not count.
        } catch (const std::exception&) {
            // The master is away: the arrival may count, in the generation that was open.
            log.write({name, "arrive", called, called, true, open, 0, "unknown"});
        }
    }
}

int member(redcoord::signal_hub& hub, std::size_t parties, const std::string& name,
           chaos::history_log& log, steady_clock::time_point until) {
    auto w = hub.listen({channel});
    const auto deadline = steady_clock::now() + seconds(5);
    while (hub.connected_links() < 2 && steady_clock::now() < deadline)
        std::this_thread::sleep_for(milliseconds(5));
    if (hub.connected_links() < 2) {
        std::fprintf(stderr, "%s: the replica link never came up\n", name.c_str());
        return 1;
    }
    const std::int64_t t = h::monotonic_ns();
    log.write({name, "subscribed", t, t, true, 0, 0, ""});
    std::thread party([&] { arrive_repeatedly(hub, parties, name, log, until); });
    while (steady_clock::now() < until + drain)
        if (auto s = w.wait(milliseconds(100))) {
            const std::int64_t at = h::monotonic_ns();
            log.write({name, "receive", at, at, true, 0, 0, s->payload});
        }
    party.join();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 8) {
        std::fprintf(stderr,
                     "usage: %s publisher|member NAME LOG SECONDS PARTIES MASTER_URL REPLICA_URL\n",
                     argv[0]);
        return 2;
    }
    const std::string role = argv[1], name = argv[2];
    chaos::history_log log(argv[3]);
    if (!log.open()) return 2;
    const auto until = steady_clock::now() + seconds(std::stoi(argv[4]));
    const auto parties = static_cast<std::size_t>(std::stoul(argv[5]));
    redcoord::connection_pool pool(chaos::quick_endpoint(argv[6]));
    redcoord::signal_hub hub(pool, {chaos::quick_endpoint(argv[7])});
    if (role == "publisher") {
        publish(hub, pool, name, log, until);
        return 0;
    }
    return member(hub, parties, name, log, until);
}
