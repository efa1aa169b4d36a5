#pragma once
// What the job queue tests share: a server, a pool on it, and a job's state read back.

#include <redcoord/core/pool.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace jobs_test {

class fixture : public ::testing::Test {
protected:
    redcoord::testing::local_server srv_;
    redcoord::connection_pool pool_{srv_.endpoint()};

    // `id`'s state (a failure, and waiting, when the job is unknown).
    redcoord::job_state state_of(redcoord::job_queue& q, const std::string& id) {
        auto j = q.get(id);
        EXPECT_TRUE(j) << id;
        return j ? j->state : redcoord::job_state::waiting;
    }
    // Every key of the queue `queue` (default prefix), sorted: what a refused add must leave
    // untouched.
    std::vector<std::string> keys_of(const std::string& queue) {
        const auto r = pool_.command({"KEYS", "redcoord:jobs:{" + queue + "}*"});
        std::vector<std::string> out;
        for (const auto& e : r.elements()) out.push_back(e.text());
        std::sort(out.begin(), out.end());
        return out;
    }
    // Whether `id` reaches state `s` within `within` (generous: the machine may be loaded).
    bool reaches(redcoord::job_queue& q, const std::string& id, redcoord::job_state s,
                 std::chrono::milliseconds within = std::chrono::seconds(10)) {
        return redcoord::testing::eventually([&] { return state_of(q, id) == s; }, within);
    }
};

}  // namespace jobs_test
