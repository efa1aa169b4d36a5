// A program written as a user of redcoord would write it, built three ways by
// scripts/package-test (find_package on the installed tree, add_subdirectory of the source
// tree, pkg-config) and run against a redis-server that script starts on a Unix socket: it
// uses every part, so each part's headers, library and dependencies must be usable.
//   package_consumer unix:///path/to/redis.sock
#include <redcoord/core/endpoint.hpp>
#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/election/master_selector.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/jobs/job_worker.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/signaling/signal_hub.hpp>
#include <redcoord/version.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <thread>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) ++failures;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace std::chrono_literals;
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s REDIS_URL\n", argv[0]);
        return 2;
    }
    try {
        // A header/library mismatch is what version() exists to catch.
        check(std::strcmp(redcoord::version(), REDCOORD_VERSION_STRING) == 0,
              "version() matches the headers");

        // core
        check(redcoord::parse_endpoint("redis://:secret@127.0.0.1:6390/1").db == 1,
              "core: endpoint parsing");
        try {
            redcoord::validate_name("", "name");
            check(false, "core: empty name refused");
        } catch (const redcoord::invalid_argument&) {
            check(true, "core: empty name refused");
        }
        redcoord::connection_pool pool(redcoord::parse_endpoint(argv[1]));
        std::string prefix = "consumer:" + redcoord::random_token().substr(0, 8) + ":";

        // lock
        redcoord::distributed_lock lock(pool, prefix + "lock");
        check(lock.try_lock(), "lock: try_lock() on a free lock");
        check(lock.fencing_token() > 0, "lock: fencing token");
        lock.unlock();

        // election
        redcoord::election_options eo;
        eo.identity = "consumer";
        redcoord::master_selector selector(pool, prefix + "election", eo);
        check(selector.campaign_once().leader, "election: the only candidate leads");
        check(selector.leader() == "consumer", "election: leader() names it");
        check(selector.resign(), "election: resign()");

        // signaling
        redcoord::signal_hub hub(pool);
        auto waiter = hub.listen({prefix + "signal"});
        hub.broadcast(prefix + "signal", "hello");
        auto got = waiter.wait(5s);
        check(got && got->payload == "hello", "signaling: broadcast reaches the waiter");

        // queue
        redcoord::reliable_queue queue(pool, prefix + "queue");
        queue.push("job");
        auto d = queue.pop(5s);
        check(d && d->payload == "job", "queue: pop() returns what push() sent");
        if (d) check(queue.ack(*d), "queue: ack()");

        // jobs
        redcoord::job_queue jobs(pool, prefix + "jobs");
        const auto added = jobs.add("work");
        redcoord::job_worker worker(jobs,
                                    [](redcoord::job_context& j) { return j.payload() + " done"; });
        worker.start();
        std::optional<redcoord::job_info> info;
        for (int i = 0; i < 500 && !(info && info->state == redcoord::job_state::completed); ++i) {
            std::this_thread::sleep_for(10ms);
            info = jobs.get(added.id);
        }
        worker.stop();
        check(info && info->result == "work done", "jobs: a worker completes an added job");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "FAILED: %s\n", e.what());
        return 1;
    }
    std::printf("package consumer (redcoord %s): %s\n", redcoord::version(),
                failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
