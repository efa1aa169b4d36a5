#include "job_replies.hpp"

#include <redcoord/core/errors.hpp>

#include <algorithm>
#include <charconv>

namespace redcoord::detail {

namespace {

[[noreturn]] void malformed(const char* script, const std::string& what) {
    throw protocol_error(std::string("jobs: unexpected reply to ") + script + ": " + what);
}

const std::vector<reply>& array_of(const reply& r, const char* script, std::size_t at_least,
                                   const char* what) {
    if (!r.is_array()) malformed(script, std::string(what) + " is not an array");
    if (r.elements().size() < at_least)
        malformed(script, std::string(what) + " has " + std::to_string(r.elements().size()) +
                              " elements, fewer than " + std::to_string(at_least));
    return r.elements();
}

const std::string& text_of(const reply& r, const char* script, const char* what) {
    if (!r.is_string() && !r.is_status()) malformed(script, std::string(what) + " is not text");
    return r.text();
}

std::int64_t integer_of(const reply& r, const char* script, const char* what) {
    if (!r.is_integer()) malformed(script, std::string(what) + " is not an integer");
    return r.integer();
}

// A decimal integer sent as text (hash fields, scores).
std::int64_t number_in(const std::string& s, const char* script, const char* what) {
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty())
        malformed(script, std::string(what) + " '" + s + "' is not an integer");
    return v;
}

// Text, or nil (a Lua false) as nullopt.
std::optional<std::string> text_or_nil(const reply& r, const char* script, const char* what) {
    if (r.is_nil()) return std::nullopt;
    return text_of(r, script, what);
}

std::vector<std::string> texts_of(const reply& r, const char* script, const char* what) {
    std::vector<std::string> out;
    for (const auto& e : array_of(r, script, 0, what)) out.push_back(text_of(e, script, what));
    return out;
}

std::uint64_t non_negative(std::int64_t v) {
    return static_cast<std::uint64_t>(std::max<std::int64_t>(0, v));
}

claimed_job_reply decode_claimed_job(const reply& r) {
    constexpr const char* s = "jobs_claim";
    const auto& j = array_of(r, s, 6, "a claimed job");
    claimed_job_reply c;
    c.id = text_of(j[0], s, "a job id");
    c.payload = text_of(j[1], s, "a payload");
    const auto attempt = integer_of(j[2], s, "an attempt");
    if (attempt < 1) malformed(s, "attempt " + std::to_string(attempt) + " < 1");
    c.attempt = static_cast<unsigned>(attempt);
    try {
        c.options = decode_job_options(text_of(j[3], s, "a job's options"));
    } catch (const protocol_error& e) {
        malformed(s, e.what());
    }
    c.timeout = std::chrono::milliseconds(number_in(text_of(j[4], s, "a timeout"), s, "timeout"));
    c.score = text_of(j[5], s, "a score");
    if (j.size() > 6) {
        const auto& d = array_of(j[6], s, 0, "dependency results");
        if (d.size() % 2 != 0) malformed(s, "dependency results are not pairs");
        for (std::size_t n = 0; n < d.size(); n += 2)
            if (!d[n + 1].is_nil())  // a result that expired, or was never stored
                c.dependency_results[text_of(d[n], s, "a dependency id")] =
                    text_of(d[n + 1], s, "a dependency result");
    }
    return c;
}

}  // namespace

job_state parse_job_state(std::string_view s, const char* script) {
    for (int i = 0; i <= static_cast<int>(job_state::waiting_children); ++i)
        if (to_string(static_cast<job_state>(i)) == s) return static_cast<job_state>(i);
    malformed(script, "unknown job state '" + std::string(s) + "'");
}

claim_reply decode_claim(const reply& r) {
    constexpr const char* s = "jobs_claim";
    const auto& e = array_of(r, s, 3, "the reply");
    const auto n = integer_of(e[0], s, "the number of jobs claimed");
    if (n < 0 || static_cast<std::size_t>(n) != e.size() - 3)
        malformed(s, "it claims " + std::to_string(n) + " jobs and holds " +
                         std::to_string(e.size() - 3));
    claim_reply c;
    c.stalled = texts_of(e[1], s, "the stalled ids");
    c.wait_ms = integer_of(e[2], s, "the wait");
    c.jobs.reserve(e.size() - 3);
    for (std::size_t i = 3; i < e.size(); ++i) c.jobs.push_back(decode_claimed_job(e[i]));
    return c;
}

settle_reply decode_settle(const reply& r, std::size_t settlements, bool with_claim) {
    constexpr const char* s = "jobs_settle";
    const auto& e = array_of(r, s, with_claim ? 2 : 1, "the reply");
    const auto& results = array_of(e[0], s, settlements, "the settlements' answers");
    if (results.size() != settlements) malformed(s, "more answers than settlements");
    settle_reply out;
    out.outcomes.reserve(settlements);
    for (const auto& v : results) {
        settle_outcome o;
        if (v.is_integer()) {
            if (v.integer() != 0 && v.integer() != 1)
                malformed(s, "a settlement's answer " + std::to_string(v.integer()));
            o.held = v.integer() == 1;
        } else if (v.is_string()) {
            o.held = true;
            o.new_state = v.text();
            (void)parse_job_state(o.new_state, s);
        } else if (!v.is_nil()) {
            malformed(s, "a settlement's answer is neither a number, a state nor false");
        }
        out.outcomes.push_back(std::move(o));
    }
    if (with_claim) out.claim = decode_claim(e[1]);
    return out;
}

std::vector<beat_status> decode_heartbeat(const reply& r, std::size_t pairs) {
    constexpr const char* s = "jobs_heartbeat";
    const auto& e = array_of(r, s, pairs, "the reply");
    if (e.size() != pairs) malformed(s, "more answers than jobs");
    std::vector<beat_status> out;
    out.reserve(pairs);
    for (const auto& v : e) {
        const auto n = integer_of(v, s, "a job's answer");
        if (n < 0 || n > 2) malformed(s, "a job's answer " + std::to_string(n));
        out.push_back(static_cast<beat_status>(n));
    }
    return out;
}

std::vector<add_outcome> decode_add(const reply& r, std::size_t jobs) {
    constexpr const char* s = "jobs_add";
    const auto& e = array_of(r, s, 2 * jobs, "the reply");
    if (e.size() != 2 * jobs) malformed(s, "not two values per job");
    std::vector<add_outcome> out(jobs);
    for (std::size_t n = 0; n < jobs; ++n) {
        const auto code = integer_of(e[2 * n], s, "a job's code");
        if (code < 0 || code > 2) malformed(s, "a job's code " + std::to_string(code));
        out[n].added = code == 1;
        out[n].debounced = code == 2;
        out[n].state = parse_job_state(text_of(e[2 * n + 1], s, "a job's state"), s);
    }
    return out;
}

std::optional<get_reply> decode_get(const reply& r) {
    constexpr const char* s = "jobs_get";
    const auto& e = array_of(r, s, 3, "the reply");
    const auto& fields = array_of(e[0], s, 0, "the job's fields");
    if (fields.empty()) return std::nullopt;
    if (fields.size() % 2 != 0) malformed(s, "the job's fields are not pairs");
    get_reply g;
    for (std::size_t i = 0; i < fields.size(); i += 2)
        g.fields[text_of(fields[i], s, "a field name")] = text_of(fields[i + 1], s, "a field");
    g.result = text_or_nil(e[1], s, "the result");
    if (auto due = text_or_nil(e[2], s, "the due time")) g.due_ms = number_in(*due, s, "due time");
    if (e.size() > 3) g.pending_dependencies = texts_of(e[3], s, "the pending dependencies");
    if (e.size() > 4) g.dependents = texts_of(e[4], s, "the dependents");
    std::sort(g.pending_dependencies.begin(), g.pending_dependencies.end());
    std::sort(g.dependents.begin(), g.dependents.end());
    return g;
}

job_info to_job_info(std::string id, const get_reply& g) {
    constexpr const char* s = "jobs_get";
    job_info j;
    j.id = std::move(id);
    // Server milliseconds since the epoch, as the scripts store them.
    const auto at = [&](const std::string& ms, const char* what) {
        return std::chrono::system_clock::time_point(
            std::chrono::milliseconds(number_in(ms, s, what)));
    };
    for (const auto& [f, v] : g.fields) {
        if (f == "state") {
            j.state = parse_job_state(v, s);
        } else if (f == "payload") {
            j.payload = v;
        } else if (f == "o") {
            try {
                const auto o = decode_job_options(v);
                j.priority = o.priority;
                j.max_attempts = o.max_attempts;
            } catch (const protocol_error& e) {
                malformed(s, e.what());
            }
        } else if (f == "attempts") {
            const auto n = number_in(v, s, "attempts");
            if (n < 0) malformed(s, "attempts " + v);
            j.attempts = static_cast<unsigned>(n);
        } else if (f == "progress") {
            j.progress = v;
        } else if (f == "error") {
            j.error = v;
        } else if (f == "worker") {
            j.worker = v;
        } else if (f == "added") {
            j.added_at = at(v, "added");
        } else if (f == "started") {
            j.started_at = at(v, "started");
        } else if (f == "finished") {
            j.finished_at = at(v, "finished");
        } else if (f == "deps") {
            for (std::size_t from = 0; from <= v.size();) {
                const auto lf = std::min(v.find('\n', from), v.size());
                if (lf > from) j.dependencies.push_back(v.substr(from, lf - from));
                from = lf + 1;
            }
        } else if (f == "ondep") {
            if (v == "i") j.on_dependency_failure = dependency_failure::ignore;
        }
    }
    j.pending_dependencies = g.pending_dependencies;
    j.dependents = g.dependents;
    j.result = g.result;
    if (j.state == job_state::delayed && g.due_ms)
        j.due_at = std::chrono::system_clock::time_point(std::chrono::milliseconds(*g.due_ms));
    return j;
}

std::optional<job_state> decode_state_or_nil(const reply& r, const char* script) {
    if (r.is_nil()) return std::nullopt;
    return parse_job_state(text_of(r, script, "the reply"), script);
}

bool decode_flag(const reply& r, const char* script) {
    const auto n = integer_of(r, script, "the reply");
    if (n != 0 && n != 1) malformed(script, "the reply " + std::to_string(n) + " is not 0 or 1");
    return n == 1;
}

std::uint64_t decode_count(const reply& r, const char* script) {
    const auto n = integer_of(r, script, "the reply");
    if (n < 0) malformed(script, "the count " + std::to_string(n) + " is negative");
    return static_cast<std::uint64_t>(n);
}

namespace {

repeat_entry decode_repeat(const reply& r, const char* s) {
    const auto& f = array_of(r, s, 6, "a repeat");
    repeat_entry e;
    e.name = text_of(f[0], s, "a repeat's name");
    e.every = std::chrono::milliseconds(number_in(text_of(f[1], s, "every"), s, "every"));
    e.cron = text_or_nil(f[2], s, "cron").value_or(std::string());
    e.time_zone = text_or_nil(f[3], s, "tz").value_or(std::string());
    e.missed = text_or_nil(f[4], s, "missed").value_or(std::string());
    if (auto last = text_or_nil(f[5], s, "last")) e.last_tick_ms = number_in(*last, s, "last");
    return e;
}

}  // namespace

repeat_list_reply decode_repeat_list(const reply& r) {
    constexpr const char* s = "jobs_repeat_list";
    const auto& e = array_of(r, s, 2, "the reply");
    repeat_list_reply out;
    out.now_ms = integer_of(e[0], s, "the server's time");
    for (const auto& item : array_of(e[1], s, 0, "the repeats"))
        out.repeats.push_back(decode_repeat(item, s));
    return out;
}

inspect_reply decode_inspect(const reply& r) {
    constexpr const char* s = "jobs_inspect";
    const auto& e = array_of(r, s, 6, "the reply");
    inspect_reply v;
    v.now_ms = integer_of(e[0], s, "the server's time");
    const auto& c = array_of(e[1], s, 6, "the counts");
    std::uint64_t* into[] = {&v.counts.waiting,         &v.counts.delayed, &v.counts.active,
                             &v.counts.completed,       &v.counts.failed,  &v.counts.dead,
                             &v.counts.waiting_children};
    for (std::size_t i = 0; i < std::size(into) && i < c.size(); ++i)
        *into[i] = non_negative(integer_of(c[i], s, "a count"));
    if (auto oldest = text_or_nil(e[2], s, "the oldest waiting job"))
        v.oldest_waiting_added_ms = number_in(*oldest, s, "the oldest waiting job");
    v.scheduler = text_or_nil(e[3], s, "the scheduler");
    if (auto epoch = text_or_nil(e[4], s, "the epoch"))
        v.scheduler_epoch = static_cast<std::uint64_t>(number_in(*epoch, s, "the epoch"));
    for (const auto& item : array_of(e[5], s, 0, "the repeats"))
        v.repeats.push_back(decode_repeat(item, s));
    if (e.size() > 6) v.paused = integer_of(e[6], s, "the pause flag") == 1;
    if (e.size() > 7)
        for (const auto& item : array_of(e[7], s, 0, "the groups")) {
            const auto& f = array_of(item, s, 4, "a group");
            group_counts g;
            g.name = text_of(f[0], s, "a group's name");
            g.waiting = non_negative(integer_of(f[1], s, "a group's waiting count"));
            g.active = non_negative(integer_of(f[2], s, "a group's active count"));
            g.limit = static_cast<std::uint32_t>(std::min<std::uint64_t>(
                non_negative(integer_of(f[3], s, "a group's limit")), UINT32_MAX));
            v.groups.push_back(std::move(g));
        }
    return v;
}

}  // namespace redcoord::detail
