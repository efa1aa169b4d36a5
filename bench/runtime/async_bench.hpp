#pragma once
// The event loop's figures (issue 35): many async_acquire waiters on one thread, and
// pipelined lock loops against a raw pipelining client.

#include <redcoord/testing/local_server.hpp>

namespace runtime_bench {

struct async_figures {
    // Beyond the baseline, while 10,000 operations wait: once the extra tick workers that the
    // start-up burst called in have ended (2 s idle), and right after the subscriptions.
    long threads = 0;
    long threads_peak = 0;
    long long connections = 0;      // extra server connections for the same
    double rss_kib_per_waiter = 0;  // resident memory per waiting lock object and operation
    double wake_p50_us = 0;         // a release until its async waiter holds the lock
};

// `n` async_acquire on `n` distinct held locks, all started from this thread on the
// runtime's own event loop; `wakes` of them are then released one by one and timed.
async_figures async_waiters(redcoord::testing::local_server& node, int n, int wakes);

struct pipelined_figures {
    double vs_same_scripts = 0;  // over a raw client sending the library's own commands
    double vs_setnx = 0;         // over a raw client sending SET NX PX + compare-and-delete
};

// Lock operations per second of 64 coroutines each looping async_acquire + async_release on
// its own key through one runtime, over those of a raw hiredis client pipelining 64 deep on one
// connection, in the same run (`seconds` each). The raw client sends (a) the very commands one
// library acquire and release send (the same EVALSHA scripts, keys and arguments, read from
// the server's MONITOR feed), and (b) the bare SET NX PX and compare-and-delete.
pipelined_figures pipelined_vs_raw(redcoord::testing::local_server& node, double seconds);

// The same 64 loops through one runtime against a server on a TLS port (the test
// certificates), over those against a plaintext server, `seconds` each in the same run: what
// the event loop's TLS sessions cost.
double pipelined_tls_vs_plain(double seconds);

}  // namespace runtime_bench
