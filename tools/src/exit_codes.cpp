#include "exit_codes.hpp"

#include <redcoord/core/errors.hpp>

namespace redcoord::cli {

std::string exit_code_table() {
    return "Exit status:\n"
           "  0        success (lock/elect: CMD exited 0)\n"
           "  N        lock/elect: CMD's own exit status (128+S when CMD died of signal S)\n"
           "  1        negative answer: queue empty, delivery no longer held, no unicast waiter, "
           "no leader,\n"
           "           barrier not reset (parties waiting)\n"
           "  2        usage: bad option, duration, URL, name or argument\n"
           "  120      connection: server unreachable or not answering (or no Redlock majority)\n"
           "  121      auth: password or user refused\n"
           "  122      server: error reply (e.g. WRONGTYPE) or not a Redis server\n"
           "  123      internal error\n"
           "  124      timed out: --wait (lock not acquired, not elected) or --timeout ran out\n"
           "  125      lost: the lock or leadership was lost while CMD ran; CMD was stopped;\n"
           "           barrier: reset with --force (or this party's lease lapsed) while waiting\n"
           "  126/127  CMD could not be executed / was not found\n"
           "  128+S    redcoord got signal S (SIGINT 130, SIGTERM 143) and released what it held\n";
}

int exit_code_for(const std::exception& e) noexcept {
    // Most derived first: auth_error is a connection_error.
    if (dynamic_cast<const auth_error*>(&e)) return auth;
    if (dynamic_cast<const connection_error*>(&e)) return connection;
    if (dynamic_cast<const timeout_error*>(&e)) return connection;
    if (dynamic_cast<const pool_exhausted*>(&e)) return connection;
    if (dynamic_cast<const outcome_unknown*>(&e)) return connection;
    if (dynamic_cast<const usage_error*>(&e)) return usage;
    if (dynamic_cast<const reply_error*>(&e)) return server;
    if (dynamic_cast<const protocol_error*>(&e)) return server;
    return internal;
}

}  // namespace redcoord::cli
