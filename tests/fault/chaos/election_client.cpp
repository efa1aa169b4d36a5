// One leader_elector candidate of a fault schedule, run in its own network namespace:
//   chaos_election_client NAME LOG SECONDS TERM_MS RESOURCE_URL ELECTION_URL
// (ELECTION_URL may be a redis-sentinel:// URL; CHAOS_REPLICAS sets election_options::replicas)
// Campaigns for "chaos" until SECONDS pass; while leading, writes to the resource host every
// few milliseconds with its epoch, through an epoch-fenced check. Every term and every write
// goes to LOG as a history line (testing/history.hpp), flushed at once.
#include "chaos_common.hpp"

#include <redcoord/core/pool.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/testing/history.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace h = redcoord::testing::history;
using namespace std::chrono;

int main(int argc, char** argv) {
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s NAME LOG SECONDS TERM_MS RESOURCE_URL ELECTION_URL\n",
                     argv[0]);
        return 2;
    }
    const std::string name = argv[1];
    chaos::history_log log(argv[2]);
    if (!log.open()) return 2;
    const auto until = steady_clock::now() + seconds(std::stoi(argv[3]));
    redcoord::connection_pool resource(chaos::quick_endpoint(argv[5]));
    redcoord::connection_pool server(chaos::quick_endpoint(argv[6]));
    redcoord::election_options o;
    o.identity = name;
    o.term = milliseconds(std::stoll(argv[4]));
    // CHAOS_REPLICAS: acknowledgements each grant and renewal waits for (WAIT), for an
    // election server behind Sentinel.
    if (const char* r = std::getenv("CHAOS_REPLICAS")) o.replication.replicas = std::stoul(r);
    redcoord::leader_elector elector(server, "chaos", o);
    auto write = [&](const h::event& e) { log.write(e); };
    elector.start();
    std::uint64_t epoch = 0;  // the term being lived, 0: none
    std::int64_t term_from = 0;
    std::int64_t term_deadline = 0;
    auto end_term = [&](std::int64_t at) {
        write({name, "term", term_from, std::min(at, term_deadline), true, epoch, 0, ""});
        epoch = 0;
    };
    while (steady_clock::now() < until) {
        // The invocation is stamped before the leadership check, so a pause between the two
        // cannot put work that was checked inside a term outside it in the history.
        const std::int64_t invoked = h::monotonic_ns();
        const auto l = elector.current_leadership();
        const auto deadline = elector.deadline();
        const bool leading = l.epoch != 0 && !l.stop.stop_requested() && deadline;
        if (epoch != 0 && (!leading || l.epoch != epoch)) end_term(invoked);
        if (!leading) {
            std::this_thread::sleep_for(milliseconds(5));
            continue;
        }
        if (epoch == 0) {
            epoch = l.epoch;
            term_from = invoked;
        }
        term_deadline = chaos::history_ns(*deadline);
        h::event w{name, "work", invoked, 0, false, l.epoch, 0, ""};
        // The epoch fence: work of the newest term seen, or a newer one.
        chaos::guarded_write(resource, chaos::fence::at_least, w);
        w.end_ns = h::monotonic_ns();
        write(w);
        std::this_thread::sleep_for(milliseconds(5));
    }
    if (epoch != 0) end_term(h::monotonic_ns());
    elector.stop();
    return 0;
}
