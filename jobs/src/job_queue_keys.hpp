#pragma once
// The keys and channels of one job queue (job_scripts.hpp names what hangs off the base).

#include <string>
#include <string_view>

namespace redcoord::detail {

struct job_keys {
    std::string base;    // <prefix>jobs:{<name>}: every key and channel shares its hash tag
    std::string wake;    // published when a job becomes ready (workers wait on it)
    std::string cancel;  // published with the id of an active job that was cancelled
    std::string events;  // job_events: "<kind>\n<id>\n<data>" in a signal_hub envelope
};

inline job_keys make_job_keys(std::string_view prefix, std::string_view name) {
    job_keys k;
    k.base = std::string(prefix) + "jobs:{" + std::string(name) + "}";
    k.wake = k.base + ":wake";
    k.cancel = k.base + ":cancel";
    k.events = k.base + ":events";
    return k;
}

}  // namespace redcoord::detail
