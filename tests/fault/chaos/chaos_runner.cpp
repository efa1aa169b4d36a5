// chaos_runner [--schedules N] [--seed S] [--seconds T]
//              [--part lock|election|queue|signaling|jobs|limit|all] [--demonstrations]
// The long runs of the fault schedules (./scripts/chaos): N seeded schedules of the safe
// families per part, then (with --demonstrations) the runs broken on purpose. Prints one line
// per schedule and a summary per part: schedules, operations, violations, and the seed of
// every schedule that failed (rerun it with --seed SEED --schedules 1). Exit 1 on a violation
// in a safe family, or a demonstration the checker did not catch.
#include "election_schedule.hpp"
#include "jobs_schedule.hpp"
#include "limit_schedule.hpp"
#include "lock_schedule.hpp"
#include "queue_schedule.hpp"
#include "signaling_schedule.hpp"

#include <redcoord/testing/local_network.hpp>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
    unsigned schedules = 6, seed = 1;
    int seconds = 10;
    std::string part = "all";
    bool demos = false, missing = false;
    for (int i = 1; i < argc && !missing; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "chaos: %s needs a value\n", a.c_str());
                missing = true;
                return "0";
            }
            return argv[++i];
        };
        if (a == "--schedules")
            schedules = static_cast<unsigned>(std::stoul(value()));
        else if (a == "--seed")
            seed = static_cast<unsigned>(std::stoul(value()));
        else if (a == "--seconds")
            seconds = std::stoi(value());
        else if (a == "--part")
            part = value();
        else if (a == "--demonstrations")
            demos = true;
        else {
            std::fprintf(
                stderr,
                "usage: chaos [--schedules N] [--seed S] [--seconds T] "
                "[--part lock|election|queue|signaling|jobs|limit|all] [--demonstrations]\n");
            return 2;
        }
    }
    if (missing) return 2;
    if (part != "lock" && part != "election" && part != "queue" && part != "signaling" &&
        part != "jobs" && part != "limit" && part != "all") {
        std::fprintf(stderr,
                     "chaos: part '%s' has no schedules (lock, election, queue, signaling, "
                     "jobs and limit have)\n",
                     part.c_str());
        return 2;
    }
    if (auto why = redcoord::testing::local_network::unavailable_reason()) {
        std::fprintf(stderr, "chaos: %s\n", why->c_str());
        return 2;
    }
    bool ok = true;
    auto wanted = [&](const char* p) { return part == p || part == "all"; };
    if (wanted("lock")) {
        auto run = [](const chaos::lock_schedule& s) { return chaos::run(s, CHAOS_LOCK_CLIENT); };
        ok &= chaos::run_part(
            "lock", schedules, seed, [&](unsigned sd) { return chaos::safe_schedule(sd, seconds); },
            run, [](const auto& o) { return o.holds + o.accepted + o.rejected; });
        if (demos) {
            auto d = chaos::demonstrations(seed + 1000, seconds);
            d.push_back(chaos::unreplicated_failovers(seed + 1100, seconds));
            ok &= chaos::run_demonstrations("lock", d, run);
        }
    }
    if (wanted("election")) {
        auto run = [](const chaos::election_schedule& s) {
            return chaos::run(s, CHAOS_ELECTION_CLIENT);
        };
        ok &= chaos::run_part(
            "election", schedules, seed,
            [&](unsigned sd) { return chaos::safe_election_schedule(sd, seconds); }, run,
            [](const auto& o) { return o.terms + o.accepted + o.rejected; });
        if (demos)
            ok &= chaos::run_demonstrations(
                "election",
                std::vector<chaos::election_schedule>{
                    chaos::election_demonstration(seed + 2000, seconds),
                    chaos::election_unreplicated_failovers(seed + 2001, seconds)},
                run);
    }
    // The work-queue parts (queue, jobs) share their schedules (queue_schedule.hpp).
    auto work_part = [&](const std::string& name, unsigned demo_seed, auto run) {
        ok &= chaos::run_part(
            name, schedules, seed,
            [&](unsigned sd) { return chaos::safe_work_schedule(name, sd, seconds); }, run,
            [](const auto& o) { return o.operations(); });
        if (demos)
            ok &=
                chaos::run_demonstrations(name,
                                          std::vector<chaos::queue_schedule>{
                                              chaos::work_demonstration(name, demo_seed, seconds)},
                                          run);
    };
    if (wanted("queue"))
        work_part("queue", seed + 3000,
                  [](const chaos::queue_schedule& s) { return chaos::run(s, CHAOS_QUEUE_CLIENT); });
    if (wanted("signaling")) {
        auto run = [](const chaos::signaling_schedule& s) {
            return chaos::run(s, CHAOS_SIGNALING_CLIENT);
        };
        ok &= chaos::run_part(
            "signaling", schedules, seed,
            [&](unsigned sd) { return chaos::safe_signaling_schedule(sd, seconds); }, run,
            [](const auto& o) { return o.operations(); });
        if (demos)
            ok &= chaos::run_demonstrations(
                "signaling", chaos::signaling_demonstrations(seed + 4000, seconds), run);
    }
    if (wanted("jobs")) {
        auto run = [](const chaos::queue_schedule& s) {
            return chaos::run_jobs(s, CHAOS_JOBS_CLIENT);
        };
        work_part("jobs", seed + 5000, run);
        // jobs/flows: one family of its own, after the work families.
        ok &= chaos::run_part(
            "jobs", schedules, seed + 6000,
            [&](unsigned sd) { return chaos::flows_schedule(sd, seconds); }, run,
            [](const auto& o) { return o.operations(); });
        // jobs/groups: one family of its own too.
        ok &= chaos::run_part(
            "jobs", schedules, seed + 8000,
            [&](unsigned sd) { return chaos::groups_schedule(sd, seconds); }, run,
            [](const auto& o) { return o.operations(); });
        if (demos)
            ok &= chaos::run_demonstrations("jobs",
                                            std::vector<chaos::queue_schedule>{
                                                chaos::flows_demonstration(seed + 7000, seconds),
                                                chaos::groups_demonstration(seed + 9000, seconds)},
                                            run);
    }
    if (wanted("limit")) {
        auto run = [](const chaos::limit_schedule& s) { return chaos::run(s, CHAOS_LIMIT_CLIENT); };
        ok &= chaos::run_part(
            "limit", schedules, seed,
            [&](unsigned sd) { return chaos::safe_limit_schedule(sd, seconds); }, run,
            [](const auto& o) { return o.holds + o.allowed + o.refused; });
        if (demos)
            ok &= chaos::run_demonstrations("limit",
                                            chaos::limit_demonstrations(seed + 6000, seconds), run);
    }
    return ok ? 0 : 1;
}
