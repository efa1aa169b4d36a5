#include <redcoord/core/errors.hpp>
#include <redcoord/testing/history.hpp>

#include <time.h>  // NOLINT(modernize-deprecated-headers): POSIX clock_gettime, CLOCK_MONOTONIC

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <utility>

namespace redcoord::testing::history {

namespace {

std::vector<const event*> select(const std::vector<event>& h, std::string_view op,
                                 bool only_ok = true) {
    std::vector<const event*> out;
    for (const auto& e : h)
        if (e.op == op && (!only_ok || e.ok)) out.push_back(&e);
    return out;
}

bool overlap(const event& a, const event& b) {
    return a.start_ns < b.end_ns && b.start_ns < a.end_ns;
}

// Intervals of different clients that overlap, found by a sweep in start order that keeps the
// latest-ending interval of each of the two clients that end last.
void exclusive_intervals(std::vector<const event*> v, const std::string& rule,
                         std::vector<violation>& out) {
    std::sort(v.begin(), v.end(),
              [](const event* a, const event* b) { return a->start_ns < b->start_ns; });
    const event* last = nullptr;   // ends last
    const event* other = nullptr;  // ends last among clients other than last's
    for (const event* e : v) {
        for (const event* seen : {last, other})
            if (seen && seen->client != e->client && overlap(*seen, *e)) {
                out.push_back({rule, describe(*seen) + " overlaps " + describe(*e)});
                break;
            }
        if (!last || e->end_ns > last->end_ns) {
            if (last && last->client != e->client) other = last;
            last = e;
        } else if (e->client != last->client && (!other || e->end_ns > other->end_ns)) {
            other = e;
        }
    }
}

// Tokens that must strictly increase along `v` in the given order.
void increasing(const std::vector<const event*>& v, bool strict, const std::string& rule,
                std::vector<violation>& out) {
    for (std::size_t i = 1; i < v.size(); ++i)
        if (strict ? v[i]->token <= v[i - 1]->token : v[i]->token < v[i - 1]->token)
            out.push_back({rule, describe(*v[i - 1]) + " then " + describe(*v[i])});
}

std::vector<const event*> by_start(std::vector<const event*> v) {
    std::sort(v.begin(), v.end(),
              [](const event* a, const event* b) { return a->start_ns < b->start_ns; });
    return v;
}

std::vector<const event*> by_seq(std::vector<const event*> v) {
    std::sort(v.begin(), v.end(), [](const event* a, const event* b) { return a->seq < b->seq; });
    return v;
}

}  // namespace

std::string describe(const event& e) {
    std::string s = e.client + " " + e.op + " [" + std::to_string(e.start_ns) + "," +
                    std::to_string(e.end_ns) + "] " + (e.ok ? "ok" : "fail");
    if (e.token) s += " token " + std::to_string(e.token);
    if (e.seq) s += " seq " + std::to_string(e.seq);
    if (!e.id.empty()) s += " id " + e.id;
    return s;
}

std::string to_log_line(const event& e) {
    return e.client + '\t' + e.op + '\t' + std::to_string(e.start_ns) + '\t' +
           std::to_string(e.end_ns) + '\t' + (e.ok ? "1" : "0") + '\t' + std::to_string(e.token) +
           '\t' + std::to_string(e.seq) + '\t' + e.id + '\n';
}

std::vector<event> read_log(const std::string& path, std::size_t* skipped) {
    std::ifstream in(path);
    if (!in) throw error("cannot read the history log " + path);
    std::vector<event> out;
    std::size_t bad = 0;
    for (std::string line; std::getline(in, line);) {
        std::vector<std::string_view> f;
        std::string_view rest(line);
        for (auto tab = rest.find('\t'); tab != std::string_view::npos; tab = rest.find('\t')) {
            f.push_back(rest.substr(0, tab));
            rest.remove_prefix(tab + 1);
        }
        f.push_back(rest);
        auto number = [](std::string_view t, auto& v) {
            auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
            return ec == std::errc() && p == t.data() + t.size() && !t.empty();
        };
        event e;
        if (f.size() != 8 || !number(f[2], e.start_ns) || !number(f[3], e.end_ns) ||
            (f[4] != "0" && f[4] != "1") || !number(f[5], e.token) || !number(f[6], e.seq)) {
            ++bad;
            continue;
        }
        e.client = f[0];
        e.op = f[1];
        e.ok = f[4] == "1";
        e.id = f[7];
        out.push_back(std::move(e));
    }
    if (skipped) *skipped = bad;
    return out;
}

std::int64_t monotonic_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::vector<violation> check_lock(const std::vector<event>& h) {
    std::vector<violation> out;
    const auto holds = select(h, "hold");
    exclusive_intervals(holds, "mutual exclusion", out);
    increasing(by_start(holds), true, "fencing tokens increase", out);
    increasing(by_seq(select(h, "write")), true, "fenced writes increase", out);
    // A write rejected is fine; one accepted below the highest token accepted before it is not.
    std::uint64_t highest = 0;
    for (const event* w : by_seq(select(h, "write", false))) {
        if (w->ok && w->token < highest)
            out.push_back({"stale write rejected",
                           describe(*w) + " accepted after token " + std::to_string(highest)});
        if (w->ok) highest = std::max(highest, w->token);
    }
    return out;
}

namespace {

// `hold` events ended at their client's `release` of the same token, when that came first.
std::vector<event> leased_holdings(const std::vector<event>& h) {
    std::map<std::pair<std::string, std::uint64_t>, std::int64_t> released;
    for (const event* r : select(h, "release", false)) {
        auto [it, fresh] = released.try_emplace({r->client, r->token}, r->start_ns);
        if (!fresh) it->second = std::min(it->second, r->start_ns);
    }
    std::vector<event> out;
    for (const event* e : select(h, "hold")) {
        out.push_back(*e);
        const auto it = released.find({e->client, e->token});
        if (it != released.end()) out.back().end_ns = std::min(out.back().end_ns, it->second);
    }
    return out;
}

void unique_tokens(const std::vector<event>& holds, std::vector<violation>& out) {
    std::map<std::uint64_t, const event*> seen;
    for (const auto& e : holds) {
        auto [it, fresh] = seen.emplace(e.token, &e);
        if (!fresh)
            out.push_back({"fencing tokens unique", describe(*it->second) + " and " + describe(e)});
    }
}

std::uint64_t units(const event& e, bool from_id) {
    if (from_id) {
        std::uint64_t n = 0;
        const auto* end = e.id.data() + e.id.size();
        return std::from_chars(e.id.data(), end, n).ec == std::errc{} && n > 0 ? n : 1;
    }
    return e.token > 0 ? e.token : 1;
}

}  // namespace

std::vector<violation> check_semaphore(const std::vector<event>& h, std::uint64_t permits) {
    std::vector<violation> out;
    const auto holds = leased_holdings(h);
    // A sweep over the holdings' ends and beginnings (an end before a beginning at the same
    // instant: a hand-over is not an overlap); one violation per excess episode.
    struct point {
        std::int64_t at;
        bool begins;
        const event* e;
    };
    std::vector<point> points;
    for (const auto& e : holds) {
        if (e.end_ns <= e.start_ns) continue;
        points.push_back({e.start_ns, true, &e});
        points.push_back({e.end_ns, false, &e});
    }
    std::sort(points.begin(), points.end(), [](const point& a, const point& b) {
        return a.at != b.at ? a.at < b.at : a.begins < b.begins;
    });
    std::set<const event*> open;
    std::uint64_t held = 0;
    bool over = false;
    for (const auto& p : points) {
        if (!p.begins) {
            open.erase(p.e);
            held -= units(*p.e, true);
            over = held > permits && over;
            continue;
        }
        open.insert(p.e);
        held += units(*p.e, true);
        if (held > permits && !over) {
            std::string what =
                std::to_string(held) + " permits of " + std::to_string(permits) + " held at once:";
            for (const event* e : open) what += "\n  " + describe(*e);
            out.push_back({"at most N permits", what});
        }
        over = held > permits;
    }
    unique_tokens(holds, out);
    return out;
}

std::vector<violation> check_rw_lock(const std::vector<event>& h) {
    std::vector<violation> out;
    const auto holds = leased_holdings(h);
    for (const auto& w : holds) {
        if (w.id != "write") continue;
        for (const auto& o : holds)
            if (&o != &w && o.client != w.client && overlap(w, o) &&
                (o.id != "write" || o.start_ns > w.start_ns ||
                 (o.start_ns == w.start_ns && &o > &w)))
                out.push_back({"writer alone", describe(w) + " overlaps " + describe(o)});
    }
    unique_tokens(holds, out);
    return out;
}

std::vector<violation> check_rate(const std::vector<event>& h, double rate_per_second,
                                  std::uint64_t burst) {
    std::vector<violation> out;
    auto allowed = select(h, "request");
    std::sort(allowed.begin(), allowed.end(),
              [](const event* a, const event* b) { return a->start_ns < b->start_ns; });
    // For each earliest start a, the requests that began at or after it, by completion: the
    // k-th completion b closes the tightest span [a, b] that holds the first k of them.
    for (std::size_t i = 0; i < allowed.size(); ++i) {
        const std::int64_t a = allowed[i]->start_ns;
        std::vector<const event*> later(allowed.begin() + static_cast<std::ptrdiff_t>(i),
                                        allowed.end());
        std::sort(later.begin(), later.end(),
                  [](const event* x, const event* y) { return x->end_ns < y->end_ns; });
        std::uint64_t cost = 0;
        for (const event* e : later) {
            cost += units(*e, false);
            const double span_s = static_cast<double>(e->end_ns - a) / 1e9;
            const double bound = static_cast<double>(burst) + rate_per_second * span_s;
            if (static_cast<double>(cost) > bound + 1e-9) {
                out.push_back({"within the rate",
                               std::to_string(cost) + " allowed in " + std::to_string(span_s) +
                                   " s (bound " + std::to_string(bound) + "), from " +
                                   describe(*allowed[i]) + " to " + describe(*e)});
                return out;  // one counter-example is enough
            }
        }
    }
    return out;
}

std::vector<violation> check_election(const std::vector<event>& h) {
    std::vector<violation> out;
    const auto terms = select(h, "term");
    exclusive_intervals(terms, "one leader at a time", out);
    for (const event* w : select(h, "work")) {
        const bool inside = std::any_of(terms.begin(), terms.end(), [&](const event* t) {
            return t->client == w->client && t->token == w->token && t->start_ns <= w->start_ns &&
                   w->start_ns <= t->end_ns;
        });
        if (!inside) out.push_back({"work only while leading", describe(*w)});
    }
    increasing(by_start(terms), true, "epochs increase", out);
    increasing(by_seq(select(h, "work")), false, "accepted epochs never decrease", out);
    return out;
}

std::vector<violation> check_queue(const std::vector<event>& h) {
    std::vector<violation> out;
    // A push whose reply never came may still have landed, and an ack whose reply never came
    // may still have removed its message: each excuses what it might have done, no more.
    std::set<std::string> pushed, attempted, maybe_acked;
    for (const event* e : select(h, "push", false)) (e->ok ? pushed : attempted).insert(e->id);
    attempted.insert(pushed.begin(), pushed.end());
    for (const event* e : select(h, "ack", false))
        if (!e->ok) maybe_acked.insert(e->id);
    std::map<std::string, int> acks, left;
    for (const event* e : select(h, "ack")) ++acks[e->id];
    for (const event* e : select(h, "left")) ++left[e->id];
    for (const auto& id : attempted) {
        const int a = acks[id], l = left[id];
        if (a + l == 0 && pushed.count(id) && !maybe_acked.count(id))
            out.push_back({"nothing lost",
                           "message " + id + " was pushed, never acked and is not in the queue"});
        if (a > 1)
            out.push_back(
                {"acked once", "message " + id + " acked " + std::to_string(a) + " times"});
        if (a >= 1 && l > 0)
            out.push_back({"acked once", "message " + id + " acked and still in the queue"});
    }
    // Faults and nacks per consumer, to judge each redelivery.
    // consumer -> cut/killed/paused/nack
    std::map<std::string, std::vector<const event*>> releases;
    for (const auto& e : h)
        if (e.op == "cut" || e.op == "killed" || e.op == "paused" || (e.op == "nack" && e.ok))
            releases[e.client].push_back(&e);
    std::map<std::string, std::vector<const event*>> deliveries;
    for (const event* e : select(h, "deliver")) {
        if (!attempted.count(e->id))
            out.push_back({"delivered only what was pushed", describe(*e)});
        deliveries[e->id].push_back(e);
    }
    // A pop's reply can come long after the move it reports (a consumer paused with the reply
    // in its socket while its lease lapsed and another consumer got the message), so the order
    // of completions is not the order on the server. A redelivery is judged in every order the
    // intervals allow (up to 6 deliveries of one message; beyond, completion order only), and
    // reported, in completion order, only when no order explains every redelivery.
    for (auto& [id, ds] : deliveries) {
        std::sort(ds.begin(), ds.end(),
                  [](const event* a, const event* b) { return a->end_ns < b->end_ns; });
        // A nack of this message after the delivery releases it. A fault releases it when it
        // overlaps the span from the delivery to the redelivery: a schedule logs a cut from
        // before it takes effect, so a pop can still complete just after the cut's start.
        auto released = [&, &id = id](const event& prev, const event& next) {
            return std::any_of(releases[prev.client].begin(), releases[prev.client].end(),
                               [&](const event* r) {
                                   if (r->op == "nack")
                                       return r->id == id && r->start_ns >= prev.start_ns &&
                                              r->start_ns <= next.end_ns;
                                   return r->end_ns >= prev.start_ns && r->start_ns <= next.end_ns;
                               });
        };
        std::vector<std::size_t> order(ds.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        bool explained = false;
        do {
            std::int64_t t = std::numeric_limits<std::int64_t>::min();
            bool fits = true;
            for (std::size_t k = 0; k < order.size() && fits; ++k) {
                const event& d = *ds[order[k]];
                t = std::max(t, d.start_ns);
                fits = t <= d.end_ns && (k == 0 || released(*ds[order[k - 1]], d));
            }
            explained = fits;
        } while (!explained && ds.size() <= 6 && std::next_permutation(order.begin(), order.end()));
        for (std::size_t i = 1; i < ds.size() && !explained; ++i)
            if (!released(*ds[i - 1], *ds[i]))
                out.push_back({"duplicates only from faults",
                               describe(*ds[i - 1]) + " then " + describe(*ds[i]) +
                                   " with no fault or nack in between"});
    }
    return out;
}

std::vector<violation> check_job_results(const std::vector<job_end_state>& jobs) {
    std::vector<violation> out;
    for (const auto& j : jobs) {
        if (j.state == "failed" || j.state == "dead") {
            out.push_back({"no job failed", "job " + j.id + " ended " + j.state + ": " + j.error});
        } else if (j.state == "completed") {
            const auto colon = j.result.rfind(':');
            if (colon == std::string::npos ||
                j.result.compare(colon + 1, std::string::npos, std::to_string(j.attempts)) != 0)
                out.push_back({"the result is the last attempt's",
                               "job " + j.id + " ran " + std::to_string(j.attempts) +
                                   " attempts and kept the result '" + j.result + "'"});
        }
    }
    return out;
}

std::vector<violation> check_signaling(const std::vector<event>& h, std::size_t parties) {
    std::vector<violation> out;
    std::map<std::string, std::vector<const event*>> links;
    for (const event* e : select(h, "link")) links[e->client].push_back(e);
    std::map<std::pair<std::string, std::string>, int> received;
    for (const event* e : select(h, "receive")) ++received[{e->client, e->id}];
    for (const auto& [key, n] : received)
        if (n > 1)
            out.push_back({"received once", key.first + " got signal " + key.second + " " +
                                                std::to_string(n) + " times"});
    for (const event* s : select(h, "signal"))
        for (const auto& [waiter, ups] : links) {
            const bool covered = std::any_of(ups.begin(), ups.end(), [&](const event* l) {
                return l->start_ns <= s->start_ns && s->end_ns <= l->end_ns;
            });
            if (covered && received[{waiter, s->id}] == 0)
                out.push_back({"every signal received while the link was up",
                               waiter + " missed " + describe(*s)});
        }
    if (parties > 0) {
        std::map<std::uint64_t, std::vector<const event*>> arrivals;
        for (const event* a : select(h, "arrive")) arrivals[a->token].push_back(a);
        for (const event* p : select(h, "pass")) {
            std::set<std::string> before;
            for (const event* a : arrivals[p->token])
                if (a->start_ns <= p->end_ns) before.insert(a->client);
            if (before.size() < parties)
                out.push_back({"barrier never releases early",
                               describe(*p) + " after " + std::to_string(before.size()) + " of " +
                                   std::to_string(parties) + " arrivals"});
        }
    }
    return out;
}

}  // namespace redcoord::testing::history
