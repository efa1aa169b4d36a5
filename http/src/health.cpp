#include <redcoord/core/errors.hpp>
#include <redcoord/http/health.hpp>

#include <cstdio>

namespace redcoord {

namespace {
std::string why(const node_result& r) {
    using st = node_result::status;
    switch (r.state) {
        case st::answered:
            return r.value && r.value->is_error() ? "error reply: " + r.value->text()
                                                  : "unexpected reply to PING";
        case st::timeout: return "no reply within the deadline";
        case st::connection_failed:
            return "connection failed" + (r.error.empty() ? std::string{} : ": " + r.error);
        case st::pool_exhausted: return "every pooled connection stayed leased";
        case st::connecting: return "still connecting at the deadline";
        case st::pending:
        case st::not_sent: break;
    }
    return "not probed";
}

bool pong(const node_result& r) { return r.answered() && r.value && r.value->is_status("PONG"); }
}  // namespace

std::vector<readiness_entry> readiness_entries(std::span<connection_pool* const> pools,
                                               std::span<const node_result> results) {
    if (pools.size() != results.size())
        throw invalid_argument("readiness_entries: pools and results differ in length");
    std::vector<readiness_entry> out;
    out.reserve(pools.size());
    for (std::size_t i = 0; i < pools.size(); ++i) {
        readiness_entry e;
        e.endpoint = pools[i] ? pools[i]->where().to_string() : std::string("(none)");
        e.ready = pong(results[i]);
        if (!e.ready) e.detail = why(results[i]);
        e.latency = results[i].latency;
        out.push_back(std::move(e));
    }
    return out;
}

http_response readiness_answer(std::span<const readiness_entry> entries) {
    bool all = true;
    std::string lines;
    for (const auto& e : entries) {
        all = all && e.ready;
        char ms[32];
        std::snprintf(ms, sizeof ms, "%.1f ms", static_cast<double>(e.latency.count()) / 1000.0);
        lines += (e.ready ? "ok   " : "FAIL ") + e.endpoint + " " + ms;
        if (!e.ready) lines += ": " + e.detail;
        lines += '\n';
    }
    http_response r;
    r.status = all ? 200 : 503;
    r.body = (all ? "ready\n" : "not ready\n") + lines;
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
}

std::vector<readiness_entry> check_readiness(std::span<connection_pool* const> pools,
                                             std::chrono::milliseconds timeout) {
    fan_out_options o;
    o.timeout = timeout;
    const auto results = fan_out(pools, std::vector<std::string>{"PING"}, o);
    return readiness_entries(pools, results);
}

}  // namespace redcoord
