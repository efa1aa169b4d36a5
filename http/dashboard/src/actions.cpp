#include "actions.hpp"

#include "action_gate.hpp"
#include "json_out.hpp"

#include <redcoord/core/errors.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/queue/reliable_queue.hpp>

#include <charconv>

namespace redcoord::detail {

namespace {

std::string required(const http_request& req, const std::string& name) {
    auto v = form_param(req, name);
    if (!v || v->empty()) throw invalid_argument("missing parameter '" + name + "'");
    return *v;
}

std::uint64_t number(const http_request& req, const std::string& name) {
    const auto v = form_param(req, name);
    if (!v || v->empty()) return 0;
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc{} || end != v->data() + v->size())
        throw invalid_argument("parameter '" + name + "' must be a non-negative integer");
    return n;
}

job_state finished_state(const std::string& s) {
    if (s == "completed") return job_state::completed;
    if (s == "failed") return job_state::failed;
    if (s == "dead") return job_state::dead;
    throw invalid_argument("parameter 'state' must be completed, failed or dead");
}

}  // namespace

const std::vector<std::string_view>& action_names() {
    static const std::vector<std::string_view> names{
        "job/retry",  "job/cancel",  "job/remove",        "jobs/clean",
        "jobs/pause", "jobs/resume", "queue/requeue-dead"};
    return names;
}

action_result run_action(connection_pool& pool, const std::string& prefix, std::string_view action,
                         const http_request& req, std::size_t cap) {
    const auto name = required(req, "name");
    json_out j(cap);
    j.begin_object().field("action", action).field("name", name);
    std::string outcome;
    if (action == "queue/requeue-dead") {
        reliable_queue_options o;
        o.prefix = prefix;
        reliable_queue q(pool, name, o);
        const auto moved = q.requeue_dead(number(req, "limit"));
        j.field("requeued", static_cast<std::uint64_t>(moved));
        outcome = std::to_string(moved) + " requeued";
        return {j.end_object().text(), outcome};
    }
    job_queue_options o;
    o.prefix = prefix;
    job_queue q(pool, name, o);
    if (action.substr(0, 4) == "job/") {
        const auto id = required(req, "id");
        j.field("id", id);
        if (action == "job/retry") {
            const bool done = q.retry(id);
            j.field("done", done);
            outcome = done ? "retried" : "not failed or dead";
        } else {
            const auto was = action == "job/cancel" ? q.cancel(id) : q.remove(id);
            const bool done = was && !(action == "job/remove" && *was == job_state::active);
            j.field("done", done).key("was");
            if (was)
                j.value(to_string(*was));
            else
                j.null();
            outcome = !was ? "unknown job"
                           : std::string(done ? "done, was " : "refused, was ") +
                                 std::string(to_string(*was));
        }
    } else if (action == "jobs/clean") {
        const auto state = finished_state(required(req, "state"));
        // The page asks before it cleans and then sends the state it confirmed: a request
        // without it (a stray click, a replayed form) deletes nothing.
        if (form_param(req, "confirm").value_or(std::string()) != to_string(state))
            throw invalid_argument("jobs/clean needs confirm=<state> (the state to delete)");
        const auto older = number(req, "older_than_ms");
        const auto removed = q.clean(state, std::chrono::milliseconds(older), number(req, "limit"));
        j.field("state", to_string(state)).field("removed", static_cast<std::uint64_t>(removed));
        outcome = std::to_string(removed) + " removed";
    } else if (action == "jobs/pause" || action == "jobs/resume") {
        const bool changed = action == "jobs/pause" ? q.pause() : q.resume();
        j.field("changed", changed);
        outcome = changed ? "changed" : "already so";
    } else {
        throw invalid_argument("unknown action");
    }
    return {j.end_object().text(), outcome};
}

}  // namespace redcoord::detail
