// The dashboard's actions against a live server: off by default, POST only, refused without
// the bearer token, with a bad one, without the page's CSRF header, from a foreign origin or
// with an oversized body; with everything right each action changes the state in Redis and
// is logged through the runtime's log sink.
#include <redcoord/testing/http_client.hpp>

#include <redcoord/core/errors.hpp>
#include <redcoord/core/log.hpp>
#include <redcoord/core/runtime.hpp>
#include <redcoord/http/dashboard.hpp>
#include <redcoord/http/metrics_server.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_server.hpp>

#include <gtest/gtest.h>

#include <mutex>
#include <regex>

// A namespace of its own: a unity batch compiles this file with others (tests/CMakeLists.txt).
namespace dashboard_actions_test {

namespace {

using namespace std::chrono_literals;
using redcoord::testing::http_test::client;
namespace http = redcoord::testing::http_test::http;

const std::string good_token = "s3cret-action-token-0123456789";

bool has(const std::string& hay, const std::string& needle) {
    return hay.find(needle) != std::string::npos;
}

struct recording_sink : redcoord::log_sink {
    std::mutex mu;
    std::vector<std::string> lines;
    void write(const redcoord::log_record& r) override {
        std::lock_guard l(mu);
        lines.push_back(std::string(r.component) + " " + std::string(r.message) +
                        redcoord::format_fields(r.fields));
    }
    std::string all() {
        std::lock_guard l(mu);
        std::string s;
        for (const auto& x : lines) s += x + "\n";
        return s;
    }
};

// What to send with an action request.
struct creds {
    std::optional<std::string> token;
    std::optional<std::string> csrf;
    std::optional<std::string> origin;
};

struct served {
    redcoord::dashboard board;
    redcoord::metrics_server server;
    served(std::shared_ptr<redcoord::connection_pool> pool, redcoord::dashboard_options o)
        : board(std::move(pool), o), server(std::make_shared<redcoord::metrics_registry>(), [&] {
              redcoord::metrics_server_options so;
              so.handlers = {board.handler()};
              return so;
          }()) {}

    http::response<http::string_body> send(http::verb v, const std::string& target,
                                           const std::string& body, const creds& c) {
        client cl(server.port());
        http::request<http::string_body> req{v, target, 11};
        req.set(http::field::content_type, "application/x-www-form-urlencoded");
        if (c.token) req.set(http::field::authorization, "Bearer " + *c.token);
        if (c.csrf) req.set("X-Redcoord-CSRF", *c.csrf);
        if (c.origin) req.set(http::field::origin, *c.origin);
        req.body() = body;
        req.prepare_payload();
        return cl.send(req, "127.0.0.1:" + std::to_string(server.port()));
    }
    // The CSRF token the page would send, from GET api/actions.
    std::string csrf() {
        client cl(server.port());
        const auto body = cl.get("/api/actions").body();
        static const std::regex re(R"re("csrf":"([0-9a-f]+)")re");
        std::smatch m;
        EXPECT_TRUE(std::regex_search(body, m, re)) << body;
        return m.size() > 1 ? std::string(m[1]) : std::string();
    }
    // A request with everything right.
    http::response<http::string_body> post(const std::string& action, const std::string& body) {
        return send(http::verb::post, "/api/actions/" + action, body,
                    {good_token, csrf(), "http://127.0.0.1:" + std::to_string(server.port())});
    }
};

struct DashboardActions : ::testing::Test {
    redcoord::testing::local_server server;
    std::shared_ptr<redcoord::runtime> rt = redcoord::runtime::create();
    std::shared_ptr<recording_sink> sink = std::make_shared<recording_sink>();
    std::shared_ptr<redcoord::connection_pool> pool = [&] {
        rt->set_log_sink(sink);
        return std::make_shared<redcoord::connection_pool>(server.endpoint(),
                                                           redcoord::pool_options{}, rt);
    }();
    redcoord::job_queue jobs{*pool, "reports"};

    redcoord::dashboard_options with_actions() {
        redcoord::dashboard_options o;
        o.allow_actions = true;
        o.action_token = good_token;
        return o;
    }
    // A job `id` that failed (cancelled while waiting).
    void failed_job(const std::string& id) {
        redcoord::job_options jo;
        jo.id = id;
        (void)jobs.add("payload of " + id, jo);
        ASSERT_EQ(jobs.cancel(id), redcoord::job_state::waiting);
        ASSERT_EQ(jobs.get(id)->state, redcoord::job_state::failed);
    }
    redcoord::job_state state_of(const std::string& id) { return jobs.get(id).value().state; }
};

// Every action route with the body that makes it act.
const std::vector<std::pair<std::string, std::string>> routes = {
    {"job/retry", "name=reports&id=j1"},
    {"job/cancel", "name=reports&id=j1"},
    {"job/remove", "name=reports&id=j1"},
    {"jobs/clean", "name=reports&state=failed&confirm=failed"},
    {"jobs/pause", "name=reports"},
    {"jobs/resume", "name=reports"},
    {"queue/requeue-dead", "name=mail"},
};

TEST_F(DashboardActions, EveryRouteRefusesNoTokenABadTokenGetAndAnOversizedBody) {
    failed_job("j1");
    served d(pool, with_actions());
    const auto csrf = d.csrf();
    ASSERT_EQ(csrf.size(), 40u);
    for (const auto& [action, body] : routes) {
        const auto target = "/api/actions/" + action;
        auto none = d.send(http::verb::post, target, body, {std::nullopt, csrf, std::nullopt});
        EXPECT_EQ(none.result(), http::status::forbidden) << action << ": " << none.body();
        auto bad = d.send(http::verb::post, target, body, {"wrong-token", csrf, std::nullopt});
        EXPECT_EQ(bad.result(), http::status::forbidden) << action;
        auto near = d.send(http::verb::post, target, body, {good_token + "x", csrf, {}});
        EXPECT_EQ(near.result(), http::status::forbidden) << action;
        auto get = d.send(http::verb::get, target, "", {good_token, csrf, std::nullopt});
        EXPECT_EQ(get.result(), http::status::method_not_allowed) << action;
        EXPECT_EQ(get[http::field::allow], "POST");
        auto big = d.send(http::verb::post, target, body + "&pad=" + std::string(5000, 'x'),
                          {good_token, csrf, std::nullopt});
        EXPECT_EQ(big.result(), http::status::payload_too_large) << action;
        auto no_csrf = d.send(http::verb::post, target, body, {good_token, std::nullopt, {}});
        EXPECT_EQ(no_csrf.result(), http::status::forbidden) << action;
        auto foreign = d.send(http::verb::post, target, body,
                              {good_token, csrf, std::string("http://evil.example")});
        EXPECT_EQ(foreign.result(), http::status::forbidden) << action;
    }
    // Nothing changed.
    EXPECT_EQ(state_of("j1"), redcoord::job_state::failed);
    EXPECT_FALSE(jobs.paused());
    // Refusals past the method and size checks are logged, without any token.
    const auto log = sink->all();
    EXPECT_TRUE(has(log, "dashboard dashboard action action=job/retry name=reports id=j1 refused="))
        << log;
    EXPECT_TRUE(has(log,
                    "action=job/retry name=reports id=j1 refused=\"missing or bad token "
                    "(Authorization: Bearer TOKEN)\"\n"))
        << log;
    EXPECT_TRUE(has(log, "refused=\"action request too large\"\n")) << log;
    EXPECT_FALSE(has(log, "wrong-token")) << log;
    EXPECT_FALSE(has(log, good_token)) << log;
}

TEST_F(DashboardActions, OffByDefaultEveryRouteIs403AndThePageHasNoCsrf) {
    failed_job("j1");
    served d(pool, {});
    client c(d.server.port());
    EXPECT_EQ(c.get("/api/actions").body(), R"({"enabled":false,"csrf":null,"actions":[]})");
    EXPECT_FALSE(has(c.get("/").body(), "data-csrf"));
    for (const auto& [action, body] : routes) {
        auto r = d.send(http::verb::post, "/api/actions/" + action, body, {good_token, "x", {}});
        EXPECT_EQ(r.result(), http::status::forbidden) << action;
        EXPECT_TRUE(has(r.body(), "actions are disabled")) << r.body();
        auto get = d.send(http::verb::get, "/api/actions/" + action, "", {});
        EXPECT_EQ(get.result(), http::status::method_not_allowed) << action;
    }
    EXPECT_EQ(state_of("j1"), redcoord::job_state::failed);
}

TEST_F(DashboardActions, RetryCancelAndRemoveAJobChangeItInRedis) {
    failed_job("j1");
    served d(pool, with_actions());
    auto r = d.post("job/retry", "name=reports&id=j1");
    EXPECT_EQ(r.result(), http::status::ok) << r.body();
    EXPECT_EQ(r.body(), R"({"action":"job/retry","name":"reports","id":"j1","done":true})");
    EXPECT_EQ(state_of("j1"), redcoord::job_state::waiting);
    r = d.post("job/cancel", "name=reports&id=j1");
    EXPECT_EQ(r.result(), http::status::ok) << r.body();
    EXPECT_TRUE(has(r.body(), R"("done":true,"was":"waiting")")) << r.body();
    EXPECT_EQ(state_of("j1"), redcoord::job_state::failed);
    r = d.post("job/remove", "name=reports&id=j1");
    EXPECT_EQ(r.result(), http::status::ok) << r.body();
    EXPECT_TRUE(has(r.body(), R"("done":true,"was":"failed")")) << r.body();
    EXPECT_FALSE(jobs.get("j1"));
    r = d.post("job/remove", "name=reports&id=j1");
    EXPECT_TRUE(has(r.body(), R"("done":false,"was":null)")) << r.body();
    const auto log = sink->all();
    EXPECT_TRUE(
        has(log, "dashboard dashboard action action=job/retry name=reports id=j1 outcome=retried"))
        << log;
    EXPECT_TRUE(has(log, "action=job/remove name=reports id=j1 outcome=\"done, was failed\""))
        << log;
}

TEST_F(DashboardActions, CleanPauseAndResumeAJobQueue) {
    failed_job("a");
    failed_job("b");
    served d(pool, with_actions());
    // Without the confirmed state (or with another one) nothing is deleted.
    for (const auto* body :
         {"name=reports&state=failed", "name=reports&state=failed&confirm=",
          "name=reports&state=failed&confirm=dead", "name=reports&state=failed&confirm=yes"}) {
        EXPECT_EQ(d.post("jobs/clean", body).result(), http::status::bad_request) << body;
        EXPECT_EQ(jobs.counts().failed, 2u) << body;
    }
    auto r = d.post("jobs/clean", "name=reports&state=failed&older_than_ms=0&confirm=failed");
    EXPECT_EQ(r.result(), http::status::ok) << r.body();
    EXPECT_TRUE(has(r.body(), R"("state":"failed","removed":2)")) << r.body();
    EXPECT_EQ(jobs.counts().failed, 0u);
    EXPECT_EQ(d.post("jobs/clean", "name=reports&state=waiting").result(),
              http::status::bad_request);
    EXPECT_EQ(d.post("jobs/clean", "name=reports&state=failed&limit=x").result(),
              http::status::bad_request);
    r = d.post("jobs/pause", "name=reports");
    EXPECT_TRUE(has(r.body(), R"("changed":true)")) << r.body();
    EXPECT_TRUE(jobs.paused());
    client c(d.server.port());
    EXPECT_TRUE(has(c.get("/api/jobs").body(), R"("paused":true)"));
    r = d.post("jobs/resume", "name=reports");
    EXPECT_TRUE(has(r.body(), R"("changed":true)")) << r.body();
    EXPECT_FALSE(jobs.paused());
    EXPECT_TRUE(has(sink->all(), "action=jobs/pause name=reports id=\"\" outcome=changed"))
        << sink->all();
}

TEST_F(DashboardActions, RequeueDeadMovesTheDeadLettersBack) {
    redcoord::reliable_queue_options qo;
    qo.max_attempts = 1;
    redcoord::reliable_queue q(*pool, "mail", qo);
    q.push("poison");
    auto m = q.pop(2s);
    ASSERT_TRUE(m);
    ASSERT_TRUE(q.nack(*m, redcoord::nack_action::dead_letter));
    ASSERT_EQ(q.stats().dead, 1u);
    served d(pool, with_actions());
    auto r = d.post("queue/requeue-dead", "name=mail");
    EXPECT_EQ(r.result(), http::status::ok) << r.body();
    EXPECT_EQ(r.body(), R"({"action":"queue/requeue-dead","name":"mail","requeued":1})");
    EXPECT_EQ(q.stats().dead, 0u);
    EXPECT_EQ(server.command({"LLEN", "redcoord:queue:{mail}"}).integer(), 1);
}

TEST_F(DashboardActions, BadParametersAndUnknownActions) {
    served d(pool, with_actions());
    EXPECT_EQ(d.post("job/retry", "name=reports").result(), http::status::bad_request);
    EXPECT_EQ(d.post("job/retry", "id=x").result(), http::status::bad_request);
    EXPECT_EQ(d.post("job/retry", "name=bad%0Aname&id=x").result(), http::status::bad_request);
    EXPECT_EQ(d.post("job/explode", "name=reports").result(), http::status::not_found);
}

TEST_F(DashboardActions, ThePageCarriesTheCsrfTokenNeverTheActionToken) {
    served d(pool, with_actions());
    client c(d.server.port());
    const auto page = c.get("/").body();
    EXPECT_TRUE(has(page, "data-csrf=\"" + d.csrf() + "\"")) << page;
    EXPECT_FALSE(has(page, good_token));
    EXPECT_FALSE(has(c.get("/api/actions").body(), good_token));
    EXPECT_FALSE(has(c.get("/app.js").body(), good_token));
}

TEST_F(DashboardActions, ActionsWithoutATokenAreRefusedAtConstruction) {
    redcoord::dashboard_options o;
    o.allow_actions = true;
    EXPECT_THROW(redcoord::dashboard(pool, o), redcoord::invalid_argument);
}

}  // namespace

}  // namespace dashboard_actions_test
