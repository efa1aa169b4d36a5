#pragma once
// Names shared by the demo and its workers. Every key of one run starts with demo:<run>: so a
// run against existing servers never touches anything else.

#include <chrono>
#include <string>

namespace demo {

struct keys {
    std::string run;
    std::string base() const { return "demo:" + run + ":"; }
    std::string election() const { return base() + "leader"; }
    std::string ticks() const { return base() + "ticks"; }
    std::string barrier() const { return base() + "barrier"; }
    std::string barrier_log() const { return base() + "barrier-log"; }
    std::string queue() const { return base() + "jobs"; }
    std::string done() const { return base() + "done"; }
    std::string done_count() const { return base() + "done-count"; }
    std::string resource() const { return base() + "counter-lock"; }
    std::string counter() const { return base() + "counter"; }
    std::string inside() const { return base() + "inside"; }
    std::string overlaps() const { return base() + "overlaps"; }
};

inline constexpr int workers = 4;
inline constexpr int jobs = 2000;
inline constexpr int increments_per_worker = 500;
inline constexpr int barrier_rounds = 3;
// The workers' Redlock TTL; --faults keeps a killed master down for longer (delayed restart).
inline constexpr std::chrono::milliseconds redlock_ttl{2000};

}  // namespace demo
