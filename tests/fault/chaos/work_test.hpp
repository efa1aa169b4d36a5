#pragma once
// What the tests of the work-queue schedules (queue_schedule.hpp: the queue and the jobs)
// require of every run besides its rules.

#include "queue_schedule.hpp"

#include <gtest/gtest.h>

namespace chaos {

// The run exercised the part: pushes (adds), deliveries (runs), acks (completions) and a
// backlog at the end.
inline void expect_exercised(const queue_outcome& o) {
    EXPECT_GT(o.pushed, 300u);
    EXPECT_GT(o.delivered, 100u);
    EXPECT_GT(o.acked, 100u);
    EXPECT_GT(o.left, 0u);
}

}  // namespace chaos
