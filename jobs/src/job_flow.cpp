#include "job_flow.hpp"

#include <redcoord/core/keys.hpp>
#include <redcoord/core/token.hpp>

#include <charconv>
#include <unordered_map>
#include <unordered_set>

namespace redcoord::detail {

void check_dependencies(const job_options& o) {
    if (o.depends_on.size() > max_job_dependencies)
        throw too_many_dependencies(
            "job_options::depends_on: " + std::to_string(o.depends_on.size()) +
            " dependencies, at most " + std::to_string(max_job_dependencies));
    std::unordered_set<std::string_view> seen;
    for (const auto& d : o.depends_on) {
        validate_name(d, "dependency id");
        if (!seen.insert(d).second)
            throw too_many_dependencies("job_options::depends_on names '" + d + "' twice");
    }
}

std::vector<std::size_t> flow_order(const std::vector<std::string>& ids,
                                    const std::vector<std::vector<std::string>>& deps) {
    std::unordered_map<std::string_view, std::size_t> at;
    for (std::size_t i = 0; i < ids.size(); ++i) at.emplace(ids[i], i);
    enum class mark : unsigned char {
        unseen,
        open,
        done
    };
    std::vector<mark> marks(ids.size(), mark::unseen);
    std::vector<std::size_t> order;
    order.reserve(ids.size());
    // Depth first, post-order: a job is emitted once every job of the call it depends on is.
    // The stack holds (job, next dependency to look at); an `open` job met again is a cycle.
    std::vector<std::pair<std::size_t, std::size_t>> stack;
    for (std::size_t start = 0; start < ids.size(); ++start) {
        if (marks[start] != mark::unseen) continue;
        stack.emplace_back(start, 0);
        marks[start] = mark::open;
        while (!stack.empty()) {
            auto& [job, next] = stack.back();
            if (next == deps[job].size()) {
                marks[job] = mark::done;
                order.push_back(job);
                stack.pop_back();
                continue;
            }
            const auto it = at.find(deps[job][next++]);
            if (it == at.end()) continue;  // a job already on the server (or unknown)
            const auto d = it->second;
            if (marks[d] == mark::done) continue;
            if (marks[d] == mark::open) {
                std::string cycle;
                bool in = false;
                for (const auto& [j, n] : stack) {
                    if (j == d) in = true;
                    if (in) cycle += ids[j] + " -> ";
                }
                throw dependency_cycle("job dependencies form a cycle: " + cycle + ids[d]);
            }
            marks[d] = mark::open;
            stack.emplace_back(d, 0);
        }
    }
    return order;
}

namespace {

// Appends `node`'s subtree, children first; returns the node's id.
std::string flatten_into(const flow_job& node,
                         std::vector<std::pair<std::string, job_options>>& out) {
    job_options o = node.options;
    if (o.id.empty()) o.id = random_token();
    for (const auto& child : node.children) o.depends_on.push_back(flatten_into(child, out));
    out.emplace_back(node.payload, std::move(o));
    return out.back().second.id;
}

}  // namespace

std::vector<std::pair<std::string, job_options>> flatten_flow(const flow_job& root) {
    std::vector<std::pair<std::string, job_options>> out;
    (void)flatten_into(root, out);
    return out;
}

void throw_if_dependency_refusal(const std::string& text,
                                 const std::vector<std::pair<std::string, job_options>>& sent) {
    // The server's text, possibly behind an error prefix added on the way ("ERR ...").
    const auto job_at = [&](std::size_t place) -> const std::pair<std::string, job_options>* {
        return place >= 1 && place <= sent.size() ? &sent[place - 1] : nullptr;
    };
    if (const auto p = text.find("UNKNOWNDEP "); p != std::string::npos) {
        std::size_t place = 0, n = 0;
        const char* at = text.data() + p + 11;
        const char* end = text.data() + text.size();
        auto r = std::from_chars(at, end, place);
        if (r.ec == std::errc() && r.ptr < end && *r.ptr == ' ')
            r = std::from_chars(r.ptr + 1, end, n);
        else
            r.ec = std::errc::invalid_argument;
        if (r.ec == std::errc()) {
            if (const auto* j = job_at(place); j && n >= 1 && n <= j->second.depends_on.size()) {
                const auto& dep = j->second.depends_on[n - 1];
                throw unknown_dependency(dep, j->second.id,
                                         "job '" + j->second.id + "' depends on '" + dep +
                                             "', neither a known job nor one added with it");
            }
        }
        throw unknown_dependency({}, {}, "a job depends on an unknown job: " + text);
    }
    if (const auto p = text.find("TOOMANYDEPS "); p != std::string::npos)
        throw too_many_dependencies("a job has more than " + std::to_string(max_job_dependencies) +
                                    " dependencies: " + text);
}

}  // namespace redcoord::detail
