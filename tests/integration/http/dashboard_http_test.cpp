// The dashboard's page and /api routes against live servers holding a lock, a leader, a queue
// with a dead message and failed jobs; discovery by paged SCAN, on one server and on a
// three-master cluster; escaping, truncation and the read-only rules.
#include "../acl_support.hpp"

#include <redcoord/core/holder_label.hpp>
#include <redcoord/testing/http_client.hpp>

#include <redcoord/core/errors.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/http/dashboard.hpp>
#include <redcoord/http/metrics_server.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/limit/inspect.hpp>
#include <redcoord/limit/rate_limiter.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/limit/sliding_window_limiter.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/inspect.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/local_cluster.hpp>
#include <redcoord/testing/local_server.hpp>
#include <redcoord/testing/wait.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>

namespace {

using namespace std::chrono_literals;
using redcoord::testing::http_test::client;
namespace http = redcoord::testing::http_test::http;

bool has(const std::string& hay, const std::string& needle) {
    return hay.find(needle) != std::string::npos;
}

// A dashboard on `pool` served by a metrics_server (as `redcoord dashboard` does).
struct served {
    redcoord::dashboard board;
    redcoord::metrics_server server;
    served(std::shared_ptr<redcoord::connection_pool> pool, redcoord::dashboard_options o = {})
        : board(std::move(pool), o), server(std::make_shared<redcoord::metrics_registry>(), [&] {
              redcoord::metrics_server_options so;
              so.handlers = {board.handler()};
              return so;
          }()) {}
    std::string get(const std::string& target, http::status want = http::status::ok) {
        client c(server.port());
        auto r = c.get(target);
        EXPECT_EQ(r.result(), want) << target << ": " << r.body();
        return r.body();
    }
};

struct DashboardHttp : ::testing::Test {
    redcoord::testing::local_server server;
    std::shared_ptr<redcoord::connection_pool> pool =
        std::make_shared<redcoord::connection_pool>(server.endpoint());
};

TEST_F(DashboardHttp, ApiLocksShowsTheHolderFingerprintNeverTheToken) {
    redcoord::distributed_lock lock(*pool, "orders", {.label = "billing <7>"});
    auto got = lock.acquire(5s);
    ASSERT_TRUE(got);
    served d(pool);
    const auto body = d.get("/api/locks");
    EXPECT_TRUE(has(body, R"("kind":"lock","name":"orders","held":true)")) << body;
    EXPECT_TRUE(has(body, R"("holder":")" + redcoord::lock_holder_fingerprint(got->token) + "\""))
        << body;
    EXPECT_TRUE(has(body, R"("fencing_counter":)" + std::to_string(got->fencing_token))) << body;
    // Who holds it: the holder label, escaped as every value from Redis.
    EXPECT_TRUE(has(body, R"("label":"billing \u003c7\u003e")")) << body;
    EXPECT_FALSE(has(body, got->token)) << "the token itself must never be shown";
    EXPECT_TRUE(has(body, R"("next":null)")) << body;
}

TEST_F(DashboardHttp, ApiElectionsShowsTheLeaderEscaped) {
    redcoord::election_options o;
    o.identity = "<img src=x onerror=alert(1)>";
    o.term = 5s;
    redcoord::leader_elector e(*pool, "scheduler", o);
    e.start();
    ASSERT_TRUE(redcoord::testing::eventually([&] { return e.is_leader(); }));
    served d(pool);
    const auto body = d.get("/api/elections");
    EXPECT_TRUE(
        has(body, R"("name":"scheduler","leader":"\u003cimg src=x onerror=alert(1)\u003e")"))
        << body;
    EXPECT_TRUE(has(body, R"("epoch":)" + std::to_string(e.epoch()))) << body;
    EXPECT_TRUE(has(
        body,
        R"("candidates":[{"identity":"\u003cimg src=x onerror=alert(1)\u003e","expires_in_ms":)"))
        << body;
    EXPECT_FALSE(has(body, "<img")) << body;
}

TEST_F(DashboardHttp, ApiQueuesShowsADeadMessage) {
    redcoord::reliable_queue_options o;
    o.max_attempts = 1;
    redcoord::reliable_queue q(*pool, "mail", o);
    q.push("first");
    q.push("second");
    auto m = q.pop(2s);
    ASSERT_TRUE(m);
    ASSERT_TRUE(q.nack(*m, redcoord::nack_action::dead_letter));
    served d(pool);
    const auto body = d.get("/api/queues");
    EXPECT_TRUE(has(body, R"("name":"mail","ready":1,"dead":1,"in_flight":0)")) << body;
    EXPECT_TRUE(has(body, R"("consumers":[{"id":")")) << body;
}

TEST_F(DashboardHttp, ApiJobsListsFailedJobsWithTheirPayloadEscapedAndCut) {
    redcoord::job_queue q(*pool, "reports");
    redcoord::job_options jo;
    jo.id = "xss";
    (void)q.add("<script>alert(1)</script>", jo);
    jo.id = "huge";
    (void)q.add(std::string(200000, 'p'), jo);
    jo.id = "fine";
    (void)q.add("ok", jo);
    ASSERT_TRUE(q.cancel("xss"));
    ASSERT_TRUE(q.cancel("huge"));
    served d(pool);
    const auto body = d.get("/api/jobs");
    EXPECT_TRUE(has(body, R"("name":"reports","counts":{"waiting":1,)")) << body;
    EXPECT_TRUE(has(body, R"("failed":2)")) << body;
    EXPECT_TRUE(has(body, R"("payload":"\u003cscript\u003ealert(1)\u003c/script\u003e")")) << body;
    EXPECT_FALSE(has(body, "<script>")) << body;
    // The 200 kB payload is cut at max_value_bytes (512) and its size said.
    EXPECT_TRUE(has(body, std::string(512, 'p') + " \xE2\x80\xA6 [200000 bytes]\"")) << body.size();
    EXPECT_FALSE(has(body, std::string(513, 'p')));
    EXPECT_TRUE(has(body, R"("payload_bytes":200000)"));
    EXPECT_LT(body.size(), 8000u);
}

// Groups (issues 37, 38): a queue's groups with their ready and active jobs and limits; the
// grouped ready jobs count as waiting.
TEST_F(DashboardHttp, ApiJobsShowsEachGroupsCountsAndLimit) {
    redcoord::job_queue q(*pool, "tenants");
    (void)q.set_group_limit("acme", 3);
    redcoord::job_options o;
    o.group = "acme";
    (void)q.add("a", o);
    (void)q.add("b", o);
    o.group = "<b>globex</b>";
    (void)q.add("c", o);
    served d(pool);
    const auto body = d.get("/api/jobs");
    EXPECT_TRUE(has(body, R"("name":"tenants","counts":{"waiting":3,)")) << body;
    EXPECT_TRUE(has(body, R"("groups":[{"name":"\u003cb\u003eglobex\u003c/b\u003e","waiting":1,)"
                          R"("active":0,"limit":0},{"name":"acme","waiting":2,"active":0,)"
                          R"("limit":3}])"))
        << body;
}

// Flows (issues 37, 38): a queue's waiting_children count and list, and each listed job's
// dependencies, pending ones and dependents.
TEST_F(DashboardHttp, ApiJobsShowsFlowsWaitingChildrenAndDependencies) {
    redcoord::job_queue q(*pool, "etl");
    redcoord::flow_job root{"load", {.id = "load"}, {}};
    root.children.push_back({"extract", {.id = "extract"}, {}});
    root.children.push_back({"clean", {.id = "clean"}, {}});
    (void)q.add_flow(root);
    ASSERT_TRUE(q.cancel("extract"));  // fails "load": a failed job with its dependencies
    redcoord::job_options o;
    o.id = "report";
    o.depends_on = {"clean"};
    (void)q.add("r", o);
    served d(pool);
    const auto body = d.get("/api/jobs");
    EXPECT_TRUE(has(body, R"("dead":0,"waiting_children":1})")) << body;
    EXPECT_TRUE(has(body, R"("waiting_children_jobs":[{"id":"report","state":"waiting_children")"))
        << body;
    EXPECT_TRUE(has(body, R"("dependencies":["clean"],"pending_dependencies":["clean"],)"
                          R"("dependents":[])"))
        << body;
    EXPECT_TRUE(has(body, R"("id":"load","state":"failed")")) << body;
    EXPECT_TRUE(has(body, R"("error":"dependency extract failed")")) << body;
    EXPECT_TRUE(has(body, R"("dependencies":["extract","clean"],"pending_dependencies":[])"))
        << body;
    const auto list = d.get("/api/jobs/list?name=etl&state=failed");
    EXPECT_TRUE(has(list, R"("name":"etl","state":"failed","offset":0,"limit":10,"total":2)"))
        << list;
}

// The failed, dead and waiting lists are paged: jobs_listed per page, with the offsets of the
// pages before and after (issue 38); the first page is the one `api/jobs` embeds.
TEST_F(DashboardHttp, ApiJobListPagesThroughFailedJobsWithPreviousAndNextOffsets) {
    redcoord::job_queue q(*pool, "many");
    for (int i = 0; i < 7; ++i) {
        redcoord::job_options o;
        o.id = "f" + std::to_string(i);
        (void)q.add("x", o);
        ASSERT_TRUE(q.cancel(o.id));
    }
    redcoord::dashboard_options opts;
    opts.jobs_listed = 3;
    served d(pool, opts);
    const auto ids_in = [](const std::string& body) {
        std::vector<std::string> ids;
        const std::regex re(R"re("id":"(f\d)")re");
        for (std::sregex_iterator it(body.begin(), body.end(), re), e; it != e; ++it)
            ids.push_back((*it)[1]);
        return ids;
    };
    std::vector<std::string> seen;
    const auto first = d.get("/api/jobs/list?name=many&state=failed");
    EXPECT_TRUE(has(first, R"("offset":0,"limit":3,"total":7)")) << first;
    EXPECT_TRUE(has(first, R"("prev_offset":null,"next_offset":3)")) << first;
    for (const auto& id : ids_in(first)) seen.push_back(id);
    const auto second = d.get("/api/jobs/list?name=many&state=failed&offset=3");
    EXPECT_TRUE(has(second, R"("prev_offset":0,"next_offset":6)")) << second;
    for (const auto& id : ids_in(second)) seen.push_back(id);
    const auto last = d.get("/api/jobs/list?name=many&state=failed&offset=6");
    EXPECT_TRUE(has(last, R"("prev_offset":3,"next_offset":null)")) << last;
    for (const auto& id : ids_in(last)) seen.push_back(id);
    // Every failed job once, oldest first, across the pages.
    EXPECT_EQ(seen, (std::vector<std::string>{"f0", "f1", "f2", "f3", "f4", "f5", "f6"}));
    const auto embedded = d.get("/api/jobs");
    EXPECT_EQ(ids_in(embedded), (std::vector<std::string>{"f0", "f1", "f2"})) << embedded;
    EXPECT_TRUE(has(embedded, R"("jobs_listed":3)")) << embedded;
    // Bad requests are 400s, an unknown queue an empty page.
    (void)d.get("/api/jobs/list?name=many&state=sleeping", http::status::bad_request);
    (void)d.get("/api/jobs/list?name=many&state=failed&offset=x", http::status::bad_request);
    (void)d.get("/api/jobs/list?state=failed", http::status::bad_request);
    const auto none = d.get("/api/jobs/list?name=nobody&state=dead");
    EXPECT_TRUE(has(none, R"("total":0,"jobs":[],"prev_offset":null,"next_offset":null)")) << none;
}

TEST_F(DashboardHttp, ApiBarriersAnswerEvenWhenEmpty) {
    served d(pool);
    EXPECT_EQ(d.get("/api/barriers"), R"({"prefix":"redcoord:","items":[],"next":null})");
    EXPECT_EQ(d.get("/api/limits"), R"({"prefix":"redcoord:","items":[],"next":null})");
}

TEST_F(DashboardHttp, ApiLimitsShowsSemaphoreHoldersRwLockHoldsAndRateLimiterState) {
    redcoord::semaphore_options so;
    so.permits = 3;
    redcoord::semaphore sem(*pool, "workers", so);
    auto p1 = sem.try_acquire(2);
    ASSERT_TRUE(p1);
    redcoord::rw_lock rw(*pool, "config");
    ASSERT_TRUE(rw.try_lock_shared());
    redcoord::rw_lock rw2(*pool, "config");
    ASSERT_TRUE(rw2.try_lock_shared());
    redcoord::rw_lock writer(*pool, "schema");
    ASSERT_TRUE(writer.try_lock());
    redcoord::rate_limiter_options ro;
    ro.rate = 1;
    ro.period = std::chrono::minutes(1);
    ro.burst = 5;
    redcoord::rate_limiter rl(*pool, "api", ro);
    ASSERT_TRUE(rl.try_acquire(3).allowed);
    redcoord::sliding_window_limiter logins(*pool, "logins",
                                            {.limit = 10, .window = std::chrono::minutes(1)});
    ASSERT_TRUE(logins.try_acquire(3).allowed);
    served d(pool);
    const auto body = d.get("/api/limits");
    // What `redcoord inspect` shows, from the same functions of the limit part.
    const auto s = redcoord::inspect_semaphore(*pool, "workers");
    ASSERT_EQ(s.holders.size(), 1u);
    EXPECT_TRUE(has(body, R"({"kind":"semaphore","name":"workers","held":2,"permits":3,"left":1,)"
                          R"("holders":[{"holder":")" +
                              s.holders[0].holder + R"(","label":")" + s.holders[0].label +
                              R"(","count":2,"ttl_left_ms":)"))
        << body;
    EXPECT_TRUE(has(body, R"("waiters":0,"fencing_counter":)")) << body;
    EXPECT_TRUE(has(body, R"({"kind":"rwlock","name":"config","writer":null,"readers":[{)"))
        << body;
    EXPECT_TRUE(has(body, R"("waiting_writers":0,"waiting_readers":0)")) << body;
    const auto w = redcoord::inspect_rw_lock(*pool, "schema");
    ASSERT_TRUE(w.writer);
    EXPECT_TRUE(has(body, R"({"kind":"rwlock","name":"schema","writer":{"holder":")" +
                              w.writer->holder + R"(","label":")" +
                              redcoord::default_holder_label() + "\""))
        << body;
    // N, rate and burst, limit and window as the latest acquisition or admission stored them.
    EXPECT_TRUE(has(body, R"({"kind":"rate","name":"api","idle":false,"burst":5,"remaining":2,)"
                          R"("full_after_ms":)"))
        << body;
    EXPECT_TRUE(has(body, R"({"kind":"window","name":"logins","idle":false,"used":3,"limit":10,)"
                          R"("remaining":7,"window_ms":60000,"reset_after_ms":)"))
        << body;
    const auto config = body.substr(body.find(R"("name":"config")"));
    EXPECT_EQ(std::count(config.begin(), config.begin() + config.find('}', config.find("]")), '{'),
              2)
        << "two readers: " << config;
}

// Follows `next` from the first page; returns every name seen and the number of pages.
std::pair<std::set<std::string>, int> walk(served& d, const std::string& route) {
    std::set<std::string> names;
    std::string cursor;
    static const std::regex name_re(R"re("name":"([^"]*)")re");
    static const std::regex next_re(R"re("next":(null|"([0-9]+\.[0-9]+)"))re");
    for (int pages = 1; pages < 1000; ++pages) {
        const auto body = d.get(route + (cursor.empty() ? "" : "?cursor=" + cursor));
        for (auto it = std::sregex_iterator(body.begin(), body.end(), name_re);
             it != std::sregex_iterator(); ++it)
            names.insert((*it)[1]);
        std::smatch m;
        if (!std::regex_search(body, m, next_re)) {
            ADD_FAILURE() << body;
            break;
        }
        if (m[1] == "null") return {names, pages};
        cursor = m[2];
    }
    return {names, -1};
}

TEST_F(DashboardHttp, DiscoveryPagesThroughEveryLockWithABoundedScan) {
    for (int i = 0; i < 60; ++i)
        server.command({"SET", "redcoord:lock:{r" + std::to_string(i) + "}", "t"});
    for (int i = 0; i < 200; ++i) server.command({"SET", "other:" + std::to_string(i), "x"});
    redcoord::dashboard_options o;
    o.page_size = 10;
    o.scan_count = 10;
    o.max_scan_calls = 3;
    served d(pool, o);
    const auto [names, pages] = walk(d, "/api/locks");
    EXPECT_EQ(names.size(), 60u);
    EXPECT_GT(pages, 3);  // not everything in one answer
    EXPECT_EQ(server.command_calls("keys"), 0);
    EXPECT_GT(server.command_calls("scan"), 0);
}

TEST_F(DashboardHttp, ThePageIsEmbeddedWithAStrictPolicyAndTheScriptUsesNoInnerHtml) {
    served d(pool);
    client c(d.server.port());
    auto page = c.get("/");
    EXPECT_EQ(page.result(), http::status::ok);
    EXPECT_EQ(page[http::field::content_type], "text/html; charset=utf-8");
    EXPECT_TRUE(has(std::string(page["Content-Security-Policy"]), "script-src 'self'"));
    EXPECT_TRUE(has(page.body(), R"(<script src="app.js"></script>)"));
    EXPECT_FALSE(has(page.body(), "http://")) << "no asset from elsewhere";
    EXPECT_FALSE(has(page.body(), "https://"));
    auto js = c.get("/app.js");
    EXPECT_EQ(js.result(), http::status::ok);
    EXPECT_TRUE(has(js.body(), "textContent"));
    EXPECT_FALSE(has(js.body(), "innerHTML"));
    EXPECT_FALSE(has(js.body(), "eval("));
    EXPECT_EQ(c.get("/app.css").result(), http::status::ok);
}

TEST_F(DashboardHttp, BadRequestsAreRefused) {
    served d(pool);
    client c(d.server.port());
    EXPECT_EQ(c.get("/api/nothing").result(), http::status::not_found);
    EXPECT_EQ(c.get("/nothing").result(), http::status::not_found);
    EXPECT_EQ(c.get("/api/locks?cursor=x").result(), http::status::bad_request);
    EXPECT_EQ(c.get("/api/locks?cursor=9.0").result(), http::status::bad_request);
    EXPECT_EQ(c.request(http::verb::post, "/api/locks", "{}").result(),
              http::status::method_not_allowed);
    EXPECT_EQ(c.request(http::verb::delete_, "/").result(), http::status::method_not_allowed);
}

TEST_F(DashboardHttp, AForeignHostNameIs403UnlessAllowed) {
    auto ask = [](std::uint16_t port, const std::string& host) {
        redcoord::testing::http_test::client c(port);
        http::request<http::string_body> req{http::verb::get, "/api/locks", 11};
        auto res = c.send(req, host);
        return res.result();
    };
    served d(pool);
    EXPECT_EQ(ask(d.server.port(), "rebound.example:8080"), http::status::forbidden);
    EXPECT_EQ(ask(d.server.port(), "127.0.0.1:8080"), http::status::ok);
    redcoord::dashboard_options o;
    o.allowed_hosts = {"ops.example"};
    served allowed(pool, o);
    EXPECT_EQ(ask(allowed.server.port(), "OPS.example"), http::status::ok);
    EXPECT_EQ(ask(allowed.server.port(), "rebound.example"), http::status::forbidden);
}

TEST_F(DashboardHttp, MountsUnderABasePathNextToMetricsAndHealth) {
    redcoord::distributed_lock lock(*pool, "x");
    ASSERT_TRUE(lock.acquire(5s));
    redcoord::dashboard_options o;
    o.base_path = "/ops/";
    redcoord::dashboard board(pool, o);
    redcoord::metrics_server_options so;
    so.handlers = {board.handler()};
    so.ready_pools = {pool};
    redcoord::metrics_server s(std::make_shared<redcoord::metrics_registry>(), so);
    client c(s.port());
    EXPECT_EQ(c.get("/ops/").result(), http::status::ok);
    EXPECT_TRUE(has(c.get("/ops/api/locks").body(), R"("name":"x")"));
    auto redirect = c.get("/ops");
    EXPECT_EQ(redirect.result(), http::status::permanent_redirect);
    EXPECT_EQ(redirect[http::field::location], "/ops/");
    EXPECT_EQ(c.get("/api/locks").result(), http::status::not_found);
    EXPECT_EQ(c.get("/metrics").result(), http::status::ok);
    EXPECT_EQ(c.get("/readyz").result(), http::status::ok);
}

TEST_F(DashboardHttp, AStoppedServerIs502NamingItWithoutItsPassword) {
    redcoord::testing::server_options so;
    so.password = "hunter2-secret";
    redcoord::testing::local_server locked(so);
    auto p = std::make_shared<redcoord::connection_pool>(locked.endpoint());
    served d(p);
    d.get("/api/locks");
    locked.kill();
    const auto body = d.get("/api/locks", http::status::bad_gateway);
    EXPECT_TRUE(has(body, ":***@127.0.0.1:" + std::to_string(locked.port()))) << body;
    EXPECT_FALSE(has(body, "hunter2-secret")) << body;
}

TEST_F(DashboardHttp, AReadOnlyUserSeesEveryRouteAndTheJobLists) {
    redcoord::distributed_lock lock(*pool, "orders");
    ASSERT_TRUE(lock.acquire(5s));
    redcoord::job_queue q(*pool, "reports");
    redcoord::job_options jo;
    jo.id = "j1";
    (void)q.add("x", jo);
    ASSERT_TRUE(q.cancel("j1"));
    redcoord::semaphore sem(*pool, "workers");
    auto permit = sem.try_acquire();
    ASSERT_TRUE(permit);
    const auto ep = redcoord::testing::make_acl_user(server, "dashboard-viewer",
                                                     redcoord::dashboard_acl_needs());
    served d(std::make_shared<redcoord::connection_pool>(ep));
    EXPECT_TRUE(has(d.get("/api/locks"), R"("name":"orders","held":true)"));
    const auto jobs = d.get("/api/jobs");
    EXPECT_TRUE(has(jobs, R"("failed":1)")) << jobs;
    EXPECT_TRUE(has(jobs, R"("failed_jobs":[{"id":"j1","state":"failed")")) << jobs;
    EXPECT_FALSE(has(jobs, "jobs_error")) << jobs;
    const auto page = d.get("/api/jobs/list?name=reports&state=failed");
    EXPECT_TRUE(has(page, R"("total":1,"jobs":[{"id":"j1","state":"failed")")) << page;
    const auto limits = d.get("/api/limits");
    EXPECT_TRUE(has(limits, R"({"kind":"semaphore","name":"workers","held":1,)")) << limits;
    for (const char* route : {"/", "/app.js", "/app.css", "/api/elections", "/api/queues",
                              "/api/barriers", "/api/actions"})
        EXPECT_FALSE(has(d.get(route), "\"error\":")) << route;
    // A primitive that cannot be read is listed with its error, the answer still whole.
    const auto no_pttl = redcoord::testing::make_acl_user(
        server, "dashboard-no-pttl",
        redcoord::testing::without_command(redcoord::dashboard_acl_needs(), "pttl"));
    served partial(std::make_shared<redcoord::connection_pool>(no_pttl));
    const auto locks = partial.get("/api/locks");
    EXPECT_TRUE(has(locks, R"({"kind":"lock","name":"orders","error":"permission denied)"))
        << locks;
    EXPECT_TRUE(has(locks, R"("}],"next":null})")) << locks;
    // Without SCAN nothing can be found: the page says so (502, the server's refusal).
    const auto no_scan = redcoord::testing::make_acl_user(
        server, "dashboard-blind",
        redcoord::testing::without_command(redcoord::dashboard_acl_needs(), "scan"));
    served blind(std::make_shared<redcoord::connection_pool>(no_scan));
    EXPECT_TRUE(has(blind.get("/api/locks", http::status::bad_gateway), "'scan'"));
}

TEST_F(DashboardHttp, BadOptionsAreRefused) {
    redcoord::dashboard_options o;
    o.base_path = "ops";
    EXPECT_THROW(redcoord::dashboard(pool, o), redcoord::invalid_argument);
    EXPECT_THROW(redcoord::dashboard(nullptr), redcoord::invalid_argument);
    redcoord::dashboard_options z;
    z.page_size = 0;
    EXPECT_THROW(redcoord::dashboard(pool, z), redcoord::invalid_argument);
}

TEST(DashboardCluster, ScansEveryMaster) {
    redcoord::testing::cluster_options co;
    co.replicas_per_master = 0;
    redcoord::testing::local_cluster cluster(co);
    auto pool =
        std::make_shared<redcoord::connection_pool>(redcoord::parse_endpoint(cluster.url()));
    std::vector<std::unique_ptr<redcoord::distributed_lock>> locks;
    for (int i = 0; i < 12; ++i) {
        locks.push_back(
            std::make_unique<redcoord::distributed_lock>(*pool, "res" + std::to_string(i)));
        ASSERT_TRUE(locks.back()->acquire(5s));
    }
    // The locks are spread over the masters (their names hash to different slots).
    std::size_t masters_with_keys = 0;
    for (std::size_t n = 0; n < 3; ++n)
        masters_with_keys += cluster.node(n).command({"DBSIZE"}).integer() > 0 ? 1 : 0;
    ASSERT_GE(masters_with_keys, 2u);
    redcoord::dashboard_options o;
    o.page_size = 4;
    served d(pool, o);
    const auto [names, pages] = walk(d, "/api/locks");
    EXPECT_EQ(names.size(), 12u);
    EXPECT_GE(pages, 2);  // a page ends once page_size names are found
    for (const auto& n : names) EXPECT_TRUE(n.rfind("res", 0) == 0) << n;
    const auto body = d.get("/api/locks");
    EXPECT_TRUE(has(body, R"("held":true)")) << body;
    // Job lists and limiter state read through the cluster pool (each name's keys share a
    // slot), and an action runs there too.
    redcoord::job_queue jobs(*pool, "reports");
    redcoord::job_options jo;
    jo.id = "j1";
    (void)jobs.add("x", jo);
    ASSERT_TRUE(jobs.cancel("j1"));
    redcoord::semaphore sem(*pool, "workers");
    auto permit = sem.try_acquire();
    ASSERT_TRUE(permit);
    EXPECT_TRUE(has(d.get("/api/jobs"), R"("failed_jobs":[{"id":"j1")"));
    EXPECT_TRUE(has(d.get("/api/limits"), R"({"kind":"semaphore","name":"workers","held":1,)"));
    redcoord::dashboard_options ao;
    ao.allow_actions = true;
    ao.action_token = "cluster-action-token-0123";
    served acting(pool, ao);
    redcoord::testing::http_test::client ac(acting.server.port());
    const auto csrf_body = ac.get("/api/actions").body();
    const auto at = csrf_body.find(R"("csrf":")");
    ASSERT_NE(at, std::string::npos) << csrf_body;
    http::request<http::string_body> retry{http::verb::post, "/api/actions/job/retry", 11};
    retry.set(http::field::authorization, "Bearer cluster-action-token-0123");
    retry.set("X-Redcoord-CSRF", csrf_body.substr(at + 8, 40));
    retry.body() = "name=reports&id=j1";
    retry.prepare_payload();
    EXPECT_EQ(ac.send(retry).result(), http::status::ok);
    EXPECT_EQ(jobs.get("j1")->state, redcoord::job_state::waiting);
    // /readyz PINGs every master of a cluster pool: one line each, and a dead one fails it.
    redcoord::metrics_server_options so;
    so.ready_pools = {pool};
    so.handlers = {d.board.handler()};
    redcoord::metrics_server s(std::make_shared<redcoord::metrics_registry>(), so);
    auto ready = redcoord::testing::http_test::get(s.port(), "/readyz");
    EXPECT_EQ(ready.result(), http::status::ok) << ready.body();
    for (std::size_t n = 0; n < 3; ++n)
        EXPECT_TRUE(has(ready.body(),
                        "ok   redis://127.0.0.1:" + std::to_string(cluster.node(n).port()) + " "))
            << ready.body();
    const auto dead_port = std::to_string(cluster.node(1).port());
    cluster.node(1).kill();
    std::string answer;
    EXPECT_TRUE(redcoord::testing::eventually(
        [&] {
            auto r = redcoord::testing::http_test::get(s.port(), "/readyz");
            answer = r.body();
            return r.result() == http::status::service_unavailable;
        },
        10s))
        << answer;
    EXPECT_TRUE(has(answer, "FAIL redis://127.0.0.1:" + dead_port + " ")) << answer;
    EXPECT_TRUE(has(answer, "ok   redis://127.0.0.1:" + std::to_string(cluster.node(0).port())))
        << answer;
}

}  // namespace
