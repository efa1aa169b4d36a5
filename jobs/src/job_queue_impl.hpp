#pragma once
// Private to jobs: what a job_queue is made of (its public header keeps only the API).
// Immutable once built, so copies of a queue and its workers share it without a lock.

#include "job_queue_keys.hpp"

#include <redcoord/jobs/job_queue.hpp>

#include <memory>
#include <string>

namespace redcoord {

struct job_queue::impl {
    connection_pool& pool;
    std::string name;
    job_queue_options opts;
    std::shared_ptr<const detail::job_keys> keys;
    std::shared_ptr<void> observer;  // the redcoord_jobs gauges (runtime metrics), or null
};

}  // namespace redcoord
