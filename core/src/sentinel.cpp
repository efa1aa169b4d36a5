#include "connection_impl.hpp"

#include <redcoord/core/deadline.hpp>
#include <redcoord/core/fan_out.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/core/sentinel.hpp>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <span>
#include <sstream>
#include <string>

namespace redcoord {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// How long an address that failed stays at the end of the candidate list.
constexpr milliseconds suspect_window{1000};

std::string addr_text(const host_port& hp) { return hp.host + ":" + std::to_string(hp.port); }

std::optional<std::uint16_t> parse_port(std::string_view s) {
    if (s.empty() || s.size() > 5) return std::nullopt;
    unsigned v = 0;
    for (char ch : s) {
        if (ch < '0' || ch > '9') return std::nullopt;
        v = v * 10 + static_cast<unsigned>(ch - '0');
    }
    if (v == 0 || v > 65535) return std::nullopt;
    return static_cast<std::uint16_t>(v);
}

std::vector<std::string> split_words(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string w; in >> w;) out.push_back(std::move(w));
    return out;
}

bool starts_with(const std::string& s, std::string_view p) { return s.rfind(p, 0) == 0; }

bool is_auth_text(const std::string& s) {
    return starts_with(s, "NOAUTH") || starts_with(s, "WRONGPASS") || s.find("authentication failed") != std::string::npos ||
           s.find("invalid password") != std::string::npos;
}

// `SENTINEL replicas` answers one flat field/value array per replica.
std::vector<host_port> parse_replicas(const reply& r) {
    std::vector<host_port> out;
    if (!r.is_array()) throw protocol_error("SENTINEL replicas: unexpected reply shape");
    for (const auto& entry : r.elements()) {
        if (!entry.is_array()) continue;
        const auto& f = entry.elements();
        std::string ip, port, flags;
        for (std::size_t i = 0; i + 1 < f.size(); i += 2) {
            if (!f[i].is_string() || !f[i + 1].is_string()) continue;
            const auto& k = f[i].text();
            if (k == "ip") ip = f[i + 1].text();
            else if (k == "port") port = f[i + 1].text();
            else if (k == "flags") flags = f[i + 1].text();
        }
        auto p = parse_port(port);
        if (ip.empty() || !p) continue;
        if (flags.find("s_down") != std::string::npos || flags.find("o_down") != std::string::npos ||
            flags.find("disconnected") != std::string::npos)
            continue;
        out.push_back({ip, *p});
    }
    return out;
}

// What is left of `deadline` for one command on `c`, capped by its command_timeout.
// @throws timeout_error when nothing is left (a zero timeout would mean "wait forever").
milliseconds command_budget(const connection& c, clock_type::time_point deadline, std::string_view what) {
    const auto left = time_left(deadline);
    if (left.count() <= 0) throw timeout_error("no time left to " + std::string(what) + " " + addr_text({c.where().host, c.where().port}));
    const auto cap = c.where().command_timeout;
    return cap.count() > 0 ? std::min(left, cap) : left;
}

// The value of `field` in a flat field/value array (HELLO's RESP2 map).
std::optional<std::string> map_field(const reply& r, std::string_view field) {
    if (!r.is_array()) return std::nullopt;
    const auto& f = r.elements();
    for (std::size_t i = 0; i + 1 < f.size(); i += 2)
        if (f[i].is_string() && f[i].text() == field && f[i + 1].is_string()) return f[i + 1].text();
    return std::nullopt;
}

// The value of `key` in an INFO section ("key:value" lines).
std::optional<std::string> info_field(const reply& r, std::string_view key) {
    if (!r.is_string()) return std::nullopt;
    std::istringstream in(r.text());
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == ':')
            return line.substr(key.size() + 1);
    }
    return std::nullopt;
}

// The role one command reports, or nullopt when the user may not run it (NOPERM, or an
// unknown command on an old server) or the reply holds no role.
template <class Parse>
std::optional<std::string> ask_role(connection& c, clock_type::time_point deadline,
                                    std::initializer_list<std::string_view> argv, Parse parse) {
    try {
        return parse(c.command_for(command_budget(c, deadline, "verify the role of"),
                                   std::span<const std::string_view>(argv.begin(), argv.size())));
    } catch (const reply_error&) {
        return std::nullopt;
    }
}

// The node's role ("master", "slave", "replica", "sentinel", ...), asked with the first of
// ROLE, HELLO 2 and INFO replication the ACL user may run: ROLE is @admin @dangerous and INFO
// @dangerous, so a least-privilege user typically has only HELLO. nullopt when all three are
// refused. Every command ends by `deadline`.
// @throws timeout_error, connection_error, protocol_error on transport failures.
std::optional<std::string> probe_role(connection& c, clock_type::time_point deadline) {
    if (auto role = ask_role(c, deadline, {"ROLE"}, [](const reply& r) -> std::optional<std::string> {
            if (r.is_array() && !r.elements().empty() && r.elements()[0].is_string()) return r.elements()[0].text();
            return std::nullopt;
        }))
        return role;
    if (auto role = ask_role(c, deadline, {"HELLO", "2"}, [](const reply& r) { return map_field(r, "role"); }))
        return role;
    return ask_role(c, deadline, {"INFO", "replication"}, [](const reply& r) { return info_field(r, "role"); });
}

}  // namespace

namespace detail {

std::size_t choose_master(std::span<const master_candidate> cands) noexcept {
    const bool disagree = cands.size() > 1 && cands[1].votes > 0;
    if (disagree) return 0;
    std::size_t oldest = 0;
    for (std::size_t i = 0; i < cands.size(); ++i) {
        if (!cands[i].suspected_since) return i;
        if (*cands[i].suspected_since < *cands[oldest].suspected_since) oldest = i;
    }
    return oldest;
}

}  // namespace detail

struct sentinel_resolver::impl {
    sentinel_resolver* owner = nullptr;
    endpoint ep;
    sentinel_options opts;
    std::vector<endpoint> sentinel_eps;
    std::vector<std::unique_ptr<connection_pool>> pools;  // one small pool per sentinel

    mutable std::mutex mu;
    std::condition_variable cv;
    std::optional<host_port> current;
    bool stale = false;
    bool resolving = false;
    clock_type::time_point next_round{};
    milliseconds backoff{0};
    std::vector<std::pair<host_port, clock_type::time_point>> suspects;
    std::vector<bool> auth_refused;  // per sentinel: its last connect failed authentication
    std::uint64_t switches = 0;
    std::uint64_t rounds = 0;
    std::string last_failure;
    // The address a majority of the configured sentinels named in the last round, if any: the
    // only one connect() accepts when the user may not ask the node its role.
    std::optional<host_port> majority;
    bool notifications_started = false;
    // Declared last: destroyed (threads joined) before anything their handlers touch.
    std::vector<std::unique_ptr<subscriber>> subs;

    std::optional<clock_type::time_point> suspected_since_locked(const host_port& hp, clock_type::time_point now) const {
        for (auto& [a, t] : suspects)
            if (a == hp && now - t < suspect_window) return t;
        return std::nullopt;
    }

    bool suspected_locked(const host_port& hp, clock_type::time_point now) const {
        return suspected_since_locked(hp, now).has_value();
    }

    host_port choose_locked(std::vector<detail::master_candidate>& cands, clock_type::time_point now) const {
        for (auto& c : cands) c.suspected_since = suspected_since_locked(c.addr, now);
        return cands[detail::choose_master(cands)].addr;
    }

    // Sets the master; returns the (old, new) pair to announce when it changed.
    std::optional<std::pair<host_port, host_port>> set_master_locked(const host_port& hp) {
        std::optional<std::pair<host_port, host_port>> changed;
        if (current && *current != hp) {
            ++switches;
            changed.emplace(*current, hp);
        }
        current = hp;
        stale = false;
        return changed;
    }

    void announce(const std::optional<std::pair<host_port, host_port>>& ch) noexcept {
        if (!ch) return;
        try {
            owner->master_changed(ch->first, ch->second);
        } catch (...) {
            // A throwing slot must not break resolution; slots report their own errors.
        }
    }

    void on_notification(const pubsub_message& m) {
        auto w = split_words(m.payload);
        std::optional<host_port> to;
        // +switch-master: "<name> <old-ip> <old-port> <new-ip> <new-port>"
        if (m.channel == "+switch-master" && w.size() >= 5 && w[0] == ep.service) {
            if (auto p = parse_port(w[4])) to = host_port{w[3], *p};
        }
        // +promoted-slave: "slave <ip:port> <ip> <port> @ <name> <master-ip> <master-port>",
        // published by the failover leader once the promoted replica reports role master,
        // which is also when that sentinel starts answering the new address.
        if (m.channel == "+promoted-slave" && w.size() >= 6 && w[4] == "@" && w[5] == ep.service) {
            if (auto p = parse_port(w[3])) to = host_port{w[2], *p};
        }
        if (!to) return;
        std::optional<std::pair<host_port, host_port>> ch;
        {
            std::lock_guard lk(mu);
            ch = set_master_locked(*to);
            backoff = milliseconds(0);
            next_round = {};
            std::erase_if(suspects, [&](auto& s) { return s.first == *to; });
        }
        cv.notify_all();
        announce(ch);
    }

    void start_notifications_locked() {
        if (notifications_started || !opts.follow_notifications) return;
        notifications_started = true;
        for (auto& sep : sentinel_eps) {
            auto s = std::make_unique<subscriber>(
                sep, [this](const pubsub_message& m) { on_notification(m); }, opts.notifications);
            (void)s->subscribe({"+switch-master", "+promoted-slave"}, milliseconds(0));
            subs.push_back(std::move(s));
        }
    }

    // One round: every sentinel at once; candidates ordered by votes, then sentinel order.
    std::vector<detail::master_candidate> ask_sentinels() {
        std::vector<connection_pool*> ps;
        for (auto& p : pools) ps.push_back(p.get());
        fan_out_options fo;
        fo.timeout = opts.query_timeout;
        auto results = fan_out(ps, {"SENTINEL", "get-master-addr-by-name", ep.service}, fo);
        std::vector<std::pair<host_port, int>> votes;
        int unknown = 0, auth = 0;
        std::string detail;
        for (std::size_t i = 0; i < results.size(); ++i) {
            auto& r = results[i];
            const std::string who = "sentinel " + addr_text(ep.sentinels[i]);
            if (r.answered()) {
                const reply& v = *r.value;
                if (v.is_error()) {
                    if (is_auth_text(v.text())) ++auth;
                    detail = who + ": " + v.text();
                } else if (v.is_nil()) {
                    ++unknown;
                } else if (v.is_array() && v.elements().size() == 2 && v.elements()[0].is_string() &&
                           v.elements()[1].is_string()) {
                    auto p = parse_port(v.elements()[1].text());
                    if (!p) {
                        detail = who + ": bad port in reply";
                        continue;
                    }
                    host_port hp{v.elements()[0].text(), *p};
                    auto it = std::find_if(votes.begin(), votes.end(), [&](auto& e) { return e.first == hp; });
                    if (it == votes.end()) votes.emplace_back(hp, 1);
                    else ++it->second;
                } else {
                    detail = who + ": unexpected reply to SENTINEL get-master-addr-by-name";
                }
                std::lock_guard lk(mu);
                auth_refused[i] = false;
            } else {
                // A pool in reconnect backoff says "failed recently": keep the earlier cause.
                bool a = is_auth_text(r.error);
                {
                    std::lock_guard lk(mu);
                    if (r.error.find("failed recently") != std::string::npos) a = auth_refused[i];
                    else auth_refused[i] = a;
                }
                if (a) ++auth;
                detail = who + ": " + (a ? std::string("authentication refused") : r.error);
            }
        }
        if (votes.empty()) {
            if (auth > 0)
                throw auth_error("sentinels of " + ep.to_string() + " refused authentication (check the sentinel password)");
            if (unknown > 0)
                throw unknown_service("no sentinel of " + ep.to_string() + " monitors a service named '" + ep.service + "'");
            throw sentinel_unreachable("no sentinel of " + ep.to_string() + " answered" +
                                       (detail.empty() ? std::string() : " (last: " + detail + ")"));
        }
        std::stable_sort(votes.begin(), votes.end(), [](auto& a, auto& b) { return a.second > b.second; });
        std::vector<detail::master_candidate> out;
        for (auto& [hp, n] : votes) out.push_back({hp, static_cast<std::size_t>(n), std::nullopt});
        bool all_suspected;
        {
            std::lock_guard lk(mu);
            auto now = clock_type::now();
            all_suspected = std::all_of(out.begin(), out.end(), [&](auto& c) { return suspected_locked(c.addr, now); });
            majority.reset();
            if (out.front().votes * 2 > ep.sentinels.size()) majority = out.front().addr;
        }
        if (all_suspected)
            for (auto& hp : promoted_replicas(ps))
                if (std::none_of(out.begin(), out.end(), [&](auto& c) { return c.addr == hp; }))
                    out.push_back({hp, 0, std::nullopt});
        return out;
    }

    // The sentinels answer the new master only after they saw the promoted replica report
    // role master (their INFO period is 1 s during a failover). The failover leader flags its
    // chosen replica "promoted" before sending it REPLICAOF NO ONE, so while the named master
    // is failing, that replica is worth trying; connect() still verifies it with ROLE.
    std::vector<host_port> promoted_replicas(std::span<connection_pool* const> ps) {
        fan_out_options fo;
        fo.timeout = opts.query_timeout;
        std::vector<host_port> out;
        for (auto& r : fan_out(ps, {"SENTINEL", "replicas", ep.service}, fo)) {
            if (!r.answered() || !r.value->is_array()) continue;
            for (const auto& entry : r.value->elements()) {
                if (!entry.is_array()) continue;
                const auto& f = entry.elements();
                std::string ip, port, flags;
                for (std::size_t i = 0; i + 1 < f.size(); i += 2) {
                    if (!f[i].is_string() || !f[i + 1].is_string()) continue;
                    const auto& k = f[i].text();
                    if (k == "ip") ip = f[i + 1].text();
                    else if (k == "port") port = f[i + 1].text();
                    else if (k == "flags") flags = f[i + 1].text();
                }
                auto p = parse_port(port);
                if (ip.empty() || !p || flags.find("promoted") == std::string::npos) continue;
                host_port hp{ip, *p};
                if (std::find(out.begin(), out.end(), hp) == out.end()) out.push_back(hp);
            }
        }
        return out;
    }

    bool named_by_majority(const host_port& hp) const {
        std::lock_guard lk(mu);
        return majority == hp;
    }

    host_port master(milliseconds wait) {
        const auto deadline = deadline_after(wait);
        std::unique_lock lk(mu);
        start_notifications_locked();
        for (;;) {
            if (current && !stale) return *current;
            if (resolving) {
                // Another caller is asking the sentinels: share its answer.
                if (cv.wait_until(lk, deadline) == std::cv_status::timeout && resolving)
                    throw timeout_error("no answer from the sentinels of " + ep.to_string() + " within " +
                                        std::to_string(wait.count()) + " ms");
                continue;
            }
            auto now = clock_type::now();
            if (now < next_round) {
                if (now >= deadline)
                    throw timeout_error("no master of " + ep.to_string() + " within " + std::to_string(wait.count()) +
                                        " ms" + (last_failure.empty() ? "" : ": " + last_failure));
                cv.wait_until(lk, std::min(next_round, deadline));
                continue;
            }
            resolving = true;
            ++rounds;
            lk.unlock();
            std::vector<detail::master_candidate> cands;
            std::exception_ptr err;
            try {
                cands = ask_sentinels();
            } catch (...) {
                err = std::current_exception();
            }
            lk.lock();
            resolving = false;
            backoff = backoff.count() == 0 ? opts.backoff_min : std::min(backoff * 2, opts.backoff_max);
            next_round = deadline_after(backoff);
            cv.notify_all();
            if (err) {
                try {
                    std::rethrow_exception(err);
                } catch (const std::exception& e) {
                    last_failure = e.what();
                }
                std::rethrow_exception(err);
            }
            now = clock_type::now();
            host_port chosen = choose_locked(cands, now);
            auto ch = set_master_locked(chosen);
            lk.unlock();
            announce(ch);
            return chosen;
        }
    }

    void confirm(const host_port& hp) {
        std::lock_guard lk(mu);
        if (current != hp) return;
        backoff = milliseconds(0);
        next_round = {};
        std::erase_if(suspects, [&](auto& s) { return s.first == hp; });
    }

    void report_failure(const host_port& hp) noexcept {
        try {
            std::lock_guard lk(mu);
            auto now = clock_type::now();
            auto it = std::find_if(suspects.begin(), suspects.end(), [&](auto& s) { return s.first == hp; });
            if (it == suspects.end()) suspects.emplace_back(hp, now);
            else it->second = now;
            if (current == hp) stale = true;
        } catch (...) {
        }
        cv.notify_all();
    }
};

sentinel_resolver::sentinel_resolver(endpoint service, sentinel_options opts) : impl_(std::make_shared<impl>()) {
    if (!service.is_sentinel()) throw invalid_argument("sentinel_resolver needs a redis-sentinel:// endpoint");
    if (service.service.empty()) throw invalid_argument("sentinel endpoint without a service name");
    if (opts.query_timeout.count() <= 0) throw invalid_argument("sentinel_options::query_timeout must be > 0");
    if (opts.backoff_min.count() < 0 || opts.backoff_max < opts.backoff_min)
        throw invalid_argument("sentinel_options: need 0 <= backoff_min <= backoff_max");
    auto& m = *impl_;
    m.owner = this;
    m.ep = std::move(service);
    m.opts = opts;
    for (auto& hp : m.ep.sentinels) {
        endpoint s;
        s.host = hp.host;
        s.port = hp.port;
        s.password = m.ep.sentinel_password;
        s.connect_timeout = std::min(m.ep.connect_timeout, opts.query_timeout);
        s.command_timeout = opts.query_timeout;
        s.keepalive = m.ep.keepalive;
        m.sentinel_eps.push_back(s);
        m.pools.push_back(std::make_unique<connection_pool>(s, pool_options{.max_size = 4, .borrow_timeout = opts.query_timeout}));
    }
    m.auth_refused.assign(m.pools.size(), false);
}

sentinel_resolver::~sentinel_resolver() {
    // Join the notification readers first: their handlers use this object.
    std::vector<std::unique_ptr<subscriber>> subs;
    {
        std::lock_guard lk(impl_->mu);
        subs.swap(impl_->subs);
    }
    subs.clear();
}

host_port sentinel_resolver::master(milliseconds wait) { return impl_->master(wait); }
host_port sentinel_resolver::master() { return impl_->master(impl_->ep.connect_timeout); }

std::optional<host_port> sentinel_resolver::cached_master() const {
    std::lock_guard lk(impl_->mu);
    return impl_->current;
}

void sentinel_resolver::report_failure(const host_port& addr) noexcept { impl_->report_failure(addr); }

connection sentinel_resolver::connect(milliseconds timeout) {
    auto& m = *impl_;
    const auto deadline = deadline_after(timeout);
    std::string last;
    bool unreachable = false;  // the last failure was "no sentinel answered"
    for (;;) {
        auto remaining = std::chrono::duration_cast<milliseconds>(deadline - clock_type::now());
        if (remaining.count() <= 0) break;
        host_port addr;
        try {
            addr = m.master(remaining);
        } catch (const unknown_service&) {
            throw;
        } catch (const auth_error&) {
            throw;
        } catch (const sentinel_unreachable& e) {
            last = e.what();
            unreachable = true;
            continue;
        } catch (const timeout_error&) {
            continue;  // master() waited out the backoff up to the deadline; keep the cause
        } catch (const error& e) {
            last = e.what();
            unreachable = false;
            continue;  // master() spaces the rounds by the backoff and honours the deadline
        }
        unreachable = false;
        try {
            auto c = detail::open_connection(m.ep.with_address(addr), std::min(remaining, m.ep.connect_timeout));
            const auto role = probe_role(c, deadline);
            if (role == "master" || (!role && m.named_by_majority(addr))) {
                m.confirm(addr);
                return c;
            }
            last = addr_text(addr) + (role ? " is not a master (its role is " + *role + ")"
                                           : " could not be asked its role (ROLE, HELLO and INFO refused to this "
                                             "user) and no majority of sentinels named it");
        } catch (const auth_error&) {
            throw;  // the data nodes refused the endpoint's credentials: retrying cannot help
        } catch (const error& e) {
            last = e.what();
        }
        m.report_failure(addr);
    }
    std::string msg = "no master of " + m.ep.to_string() + " reachable within " + std::to_string(timeout.count()) +
                      " ms" + (last.empty() ? std::string() : ": " + last);
    if (unreachable) throw sentinel_unreachable(msg);
    throw sentinel_error(msg);
}

std::vector<host_port> sentinel_resolver::replicas() {
    auto& m = *impl_;
    int unknown = 0, auth = 0;
    std::string detail;
    for (std::size_t i = 0; i < m.pools.size(); ++i) {
        try {
            auto r = m.pools[i]->command({"SENTINEL", "replicas", m.ep.service});
            return parse_replicas(r);
        } catch (const auth_error& e) {
            ++auth;
            detail = e.what();
        } catch (const reply_error& e) {
            std::string t = e.what();
            if (t.find("No such master") != std::string::npos) ++unknown;
            else if (is_auth_text(t)) ++auth;
            detail = t;
        } catch (const error& e) {
            detail = e.what();
        }
    }
    if (auth > 0) throw auth_error("sentinels of " + m.ep.to_string() + " refused authentication (check the sentinel password)");
    if (unknown > 0)
        throw unknown_service("no sentinel of " + m.ep.to_string() + " monitors a service named '" + m.ep.service + "'");
    throw sentinel_unreachable("no sentinel of " + m.ep.to_string() + " answered SENTINEL replicas" +
                               (detail.empty() ? std::string() : " (last: " + detail + ")"));
}

std::uint64_t sentinel_resolver::rounds() const {
    std::lock_guard lk(impl_->mu);
    return impl_->rounds;
}

std::uint64_t sentinel_resolver::switches() const {
    std::lock_guard lk(impl_->mu);
    return impl_->switches;
}

const endpoint& sentinel_resolver::where() const noexcept { return impl_->ep; }

std::shared_ptr<sentinel_resolver> shared_sentinel_resolver(const endpoint& service) {
    static std::mutex registry_mu;
    static std::map<std::string, std::weak_ptr<sentinel_resolver>> registry;
    // Everything that shapes the resolver's connections is part of the key.
    std::string key = service.to_string();
    for (const std::string* f : {&service.user, &service.password, &service.sentinel_password}) key += '\0' + *f;
    key += '\0' + std::to_string(service.connect_timeout.count()) + '/' + std::to_string(service.command_timeout.count()) +
           '/' + (service.keepalive ? "k" : "-");
    std::lock_guard lk(registry_mu);
    std::erase_if(registry, [](auto& e) { return e.second.expired(); });
    if (auto r = registry[key].lock()) return r;
    auto r = std::make_shared<sentinel_resolver>(service);
    registry[key] = r;
    return r;
}

std::vector<endpoint> discover_replicas(const endpoint& ep) {
    std::vector<endpoint> out;
    if (ep.is_sentinel()) {
        sentinel_options o;
        o.follow_notifications = false;
        sentinel_resolver r(ep, o);
        for (auto& hp : r.replicas()) out.push_back(ep.with_address(hp));
        return out;
    }
    connection c(ep);
    auto role = c.command({"ROLE"});
    // A master's ROLE: ["master", offset, [[ip, port, offset], ...]].
    if (!role.is_array() || role.elements().size() < 3 || !role.elements()[0].is_string() ||
        role.elements()[0].text() != "master" || !role.elements()[2].is_array())
        return out;
    for (const auto& r : role.elements()[2].elements()) {
        if (!r.is_array() || r.elements().size() < 2 || !r.elements()[0].is_string() || !r.elements()[1].is_string())
            continue;
        auto p = parse_port(r.elements()[1].text());
        if (!p) continue;
        endpoint e = ep;
        e.host = r.elements()[0].text();
        e.port = *p;
        e.unix_path.clear();
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace redcoord
