#include <redcoord/core/errors.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/election/election_options.hpp>

#include <unistd.h>

#include <array>

namespace redcoord {

std::string default_identity() {
    std::array<char, 256> host{};
    if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
    std::string h(host.data());
    if (h.empty()) h = "host";
    return h + ":" + std::to_string(::getpid()) + ":" + random_token().substr(0, 8);
}

resolved_election_options resolve(std::string_view name, const election_options& opts) {
    using std::chrono::milliseconds;
    validate_name(name, "election name");
    resolved_election_options r;
    r.identity = opts.identity.empty() ? default_identity() : opts.identity;
    validate_name(r.identity, "election identity");
    if (opts.term <= milliseconds::zero())
        throw invalid_argument("election term must be > 0 ms, got " + std::to_string(opts.term.count()));
    r.term = opts.term;
    r.retry_period = opts.retry_period.value_or(opts.term / 3);
    if (r.retry_period <= milliseconds::zero() || r.retry_period >= r.term)
        throw invalid_argument("election retry_period must be in (0, term), got " +
                               std::to_string(r.retry_period.count()) + " ms for a term of " +
                               std::to_string(r.term.count()) + " ms");
    r.drift = opts.drift.value_or(opts.term / 100 + milliseconds(2));
    if (r.drift < milliseconds::zero() || r.drift >= r.term)
        throw invalid_argument("election drift must be in [0, term), got " + std::to_string(r.drift.count()) + " ms");
    if (opts.replicas < 0) throw invalid_argument("election replicas must be >= 0");
    if (opts.replicas > 0 && opts.replica_timeout <= milliseconds::zero())
        throw invalid_argument("election replica_timeout must be > 0 when replicas > 0");
    r.replicas = opts.replicas;
    r.replica_timeout = opts.replica_timeout;
    r.epoch_ttl = opts.epoch_ttl;
    r.key_prefix = opts.key_prefix;
    return r;
}

election_keys make_election_keys(std::string_view prefix, std::string_view name) {
    return {make_key(prefix, "election", name), make_key(prefix, "election", name, "epoch"),
            make_key(prefix, "election", name, "handoff")};
}

}  // namespace redcoord
