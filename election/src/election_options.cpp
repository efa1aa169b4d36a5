#include <redcoord/core/errors.hpp>
#include <redcoord/core/holder_label.hpp>
#include <redcoord/core/keys.hpp>
#include <redcoord/core/token.hpp>
#include <redcoord/election/election_options.hpp>

#include <unistd.h>

#include <array>

namespace redcoord {
namespace {

using std::chrono::milliseconds;

std::string ms(milliseconds d) { return std::to_string(d.count()) + " ms"; }

// Beyond these, PEXPIRE and steady-clock deadlines would overflow or Redis would refuse them.
constexpr milliseconds max_term = std::chrono::hours(24 * 365);
constexpr milliseconds max_epoch_ttl = std::chrono::hours(24 * 365 * 10);

[[noreturn]] void reject(const std::string& what) { throw invalid_argument("election " + what); }

// With both derived values defaulted, a failing rule is the term's fault, not theirs.
void check_term_fits_defaults(const election_options& opts, milliseconds retry,
                              milliseconds drift) {
    if (opts.retry_period != milliseconds::zero() || opts.drift) return;
    if (drift < opts.term && retry > milliseconds::zero() && retry <= (opts.term - drift) / 2)
        return;
    reject("term of " + ms(opts.term) +
           " is too short: its default retry_period (term / 3) and drift (term / 100 + 2 ms) leave "
           "no room "
           "for a renewal; use a term of at least 4 ms, or set retry_period and drift");
}

void check_drift(milliseconds drift, milliseconds term) {
    if (drift < milliseconds::zero() || drift >= term)
        reject("drift must be in [0, term), got " + ms(drift) + " for a term of " + ms(term));
}

// client-go's rule in spirit (LeaseDuration > RenewDeadline > RetryPeriod): a leader must be
// able to miss one renewal and still renew before its deadline `term - drift`.
void check_retry(const election_options& opts, milliseconds retry, milliseconds term,
                 milliseconds drift) {
    const auto most = (term - drift) / 2;
    if (retry > milliseconds::zero() && retry <= most) return;
    reject("retry_period must be in (0, (term - drift) / 2] = (0, " + ms(most) +
           "] so that one lost renewal is survivable, got " + ms(retry) +
           (opts.retry_period != milliseconds::zero() ? "" : " (term / 3)") + " for a term of " +
           ms(term) + " and a drift of " + ms(drift));
}

// A renewal is sent one retry period after the last confirmed one; with WAIT it may take the
// whole replica_timeout, and it still has to be confirmed before the deadline.
void check_replicas(const election_options& opts, milliseconds retry, milliseconds term,
                    milliseconds drift) {
    if (opts.replication.replicas == 0) return;
    const auto room = term - drift - retry;
    if (opts.replication.timeout > milliseconds::zero() && opts.replication.timeout < room) return;
    reject("replication.timeout must be in (0, term - drift - retry_period) = (0, " + ms(room) +
           ") when replicas > 0, so a renewal's WAIT ends before the leadership deadline; got " +
           ms(opts.replication.timeout));
}

}  // namespace

std::string default_identity() {
    return default_holder_label() + ":" + random_token().substr(0, 8);
}

resolved_election_options resolve(std::string_view name, const election_options& opts) {
    validate_name(name, "election name");
    resolved_election_options r;
    r.identity = opts.identity.empty() ? default_identity() : opts.identity;
    validate_name(r.identity, "election identity");
    if (opts.term <= milliseconds::zero() || opts.term > max_term)
        reject("term must be in (0, 1 year], got " + ms(opts.term));
    r.term = opts.term;
    if (opts.retry_period < milliseconds::zero())
        reject("retry_period must be > 0 (or zero for term / 3), got " + ms(opts.retry_period));
    r.retry_period = opts.retry_period == milliseconds::zero() ? opts.term / 3 : opts.retry_period;
    r.drift = opts.drift.value_or(opts.term / 100 + milliseconds(2));
    check_term_fits_defaults(opts, r.retry_period, r.drift);
    check_drift(r.drift, r.term);
    check_retry(opts, r.retry_period, r.term, r.drift);
    check_replicas(opts, r.retry_period, r.term, r.drift);
    r.replication = opts.replication;
    if (opts.epoch_ttl < r.term || opts.epoch_ttl > max_epoch_ttl)
        reject(
            "epoch_ttl must be in [term, 10 years] (the counter must outlive the selector it "
            "numbers), got " +
            ms(opts.epoch_ttl) + " for a term of " + ms(r.term));
    r.epoch_ttl = opts.epoch_ttl;
    r.prefix = opts.prefix;
    return r;
}

election_keys make_election_keys(std::string_view prefix, std::string_view name) {
    return {make_key(prefix, "election", name), make_key(prefix, "election", name, "epoch"),
            make_key(prefix, "election", name, "handoff"),
            make_key(prefix, "election", name, "candidates")};
}

}  // namespace redcoord
