// `redcoord dashboard` in a real browser: headless chromium loads the page, runs its script
// against live servers holding a lock, a leader, a queue with a dead message and failed jobs,
// and the DOM it builds is checked; stored markup must show as text and never run. With
// actions allowed, chromium is driven over the DevTools protocol: buttons are clicked without
// and then with the token, and the page must show the refusal, then the new state. Skips
// when chromium is absent (scripts/bootstrap installs it).
#include "cli_harness.hpp"
#include "devtools.hpp"

#include <redcoord/core/connection.hpp>
#include <redcoord/election/leader_elector.hpp>
#include <redcoord/jobs/job_queue.hpp>
#include <redcoord/limit/rw_lock.hpp>
#include <redcoord/limit/semaphore.hpp>
#include <redcoord/lock/distributed_lock.hpp>
#include <redcoord/lock/inspect.hpp>
#include <redcoord/queue/reliable_queue.hpp>
#include <redcoord/testing/http_client.hpp>

#include <unistd.h>

#include <csignal>
#include <filesystem>

using namespace cli_test;

namespace {

std::optional<std::string> find_chromium() {
    for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
        if (::access(p, X_OK) == 0) return std::string(p);
    return std::nullopt;
}

// Runs headless chromium on `url` with `mode` (`--dump-dom`, `--screenshot=F`), letting the
// page's script run for `budget` of virtual time; returns what it printed on stdout.
std::string chromium(const std::string& exe, const temp_dir& dir, const std::string& url,
                     const std::string& mode, const std::string& budget_ms) {
    static int n = 0;
    const std::string out = dir.file("chromium-" + std::to_string(++n) + ".out");
    const std::string err = dir.file("chromium-" + std::to_string(n) + ".err");
    redcoord::testing::process_options o;
    o.own_process_group = true;
    redcoord::testing::process p(
        {"/bin/sh", "-c",
         "exec \"$0\" --headless --no-sandbox --disable-gpu --no-first-run "
         "--user-data-dir=\"$1\" --window-size=1280,1500 --virtual-time-budget=\"$2\" \"$3\" "
         "\"$4\" > \"$5\" 2> \"$6\"",
         exe, dir.file("profile"), budget_ms, mode, url, out, err},
        o);
    const auto st = p.wait_for(120s);
    EXPECT_TRUE(st.has_value()) << "chromium did not finish: " << read_file(err);
    if (!st) p.kill();
    EXPECT_EQ(st.value_or(-1), 0) << read_file(err);
    return read_file(out);
}

std::size_t count(const std::string& hay, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
    return n;
}

// The port a `redcoord dashboard` printed, once it has (nothing after 10 s).
std::optional<std::uint16_t> served_port(const cli_process& board) {
    std::optional<std::uint16_t> port;
    eventually([&] {
        return (port = redcoord::testing::http_test::printed_port(board.output(), "' at "))
            .has_value();
    });
    return port;
}

// A live server and chromium, when installed (the cases that need it skip without).
struct BrowserDashboard : ::testing::Test {
    redcoord::testing::local_server server;
    temp_dir dir;
    redcoord::connection_pool pool{server.endpoint()};
    std::optional<std::string> exe = find_chromium();

    // Opens the page of `board` (a `redcoord dashboard`) in `b` and waits until it loaded;
    // false (with the failure recorded) when it did not.
    static bool open_board(const cli_process& board, browser_test::devtools_browser& b) {
        const auto port = served_port(board);
        if (!port) {
            ADD_FAILURE() << board.output();
            return false;
        }
        b.navigate("http://127.0.0.1:" + std::to_string(*port) + "/");
        if (b.wait_true("document.body.dataset.loaded === 'true'")) return true;
        ADD_FAILURE() << board.output();
        return false;
    }

    // Job `id` with `payload`, failed (cancelled while waiting).
    static void fail_job(redcoord::job_queue& jobs, const std::string& id,
                         const std::string& payload) {
        redcoord::job_options jo;
        jo.id = id;
        (void)jobs.add(payload, jo);
        ASSERT_TRUE(jobs.cancel(id));
    }
    // Queue `mail` whose dead-letter list holds `dead`, and `ready` (when given) waiting.
    std::unique_ptr<redcoord::reliable_queue> queue_with_dead_letter(
        const std::string& dead, const std::string& ready = {}) {
        redcoord::reliable_queue_options qo;
        qo.max_attempts = 1;
        auto q = std::make_unique<redcoord::reliable_queue>(pool, "mail", qo);
        q->push(dead);  // popped first: the list is FIFO
        if (!ready.empty()) q->push(ready);
        auto m = q->pop(2s);
        EXPECT_TRUE(m && m->payload == dead);
        if (m) EXPECT_TRUE(q->nack(*m, redcoord::nack_action::dead_letter));
        return q;
    }
};

}  // namespace

TEST_F(BrowserDashboard, ShowsLivePrimitivesAndNeverRunsStoredMarkup) {
    if (!exe) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";

    redcoord::distributed_lock lock(pool, "orders");
    const auto held = lock.acquire(5s);
    ASSERT_TRUE(held);

    redcoord::election_options eo;
    eo.identity = "<img src=x onerror=\"document.title='pwned'\">";
    eo.term = 10s;
    redcoord::leader_elector elector(pool, "scheduler", eo);
    elector.start();
    ASSERT_TRUE(eventually([&] { return elector.is_leader(); }));

    auto queue = queue_with_dead_letter("poison", "ok");
    redcoord::job_queue jobs(pool, "reports");
    fail_job(jobs, "xss", "<script>document.body.dataset.pwned='yes'</script>");

    redcoord::semaphore_options so;
    so.permits = 4;
    redcoord::semaphore sem(pool, "workers", so);
    auto permits = sem.try_acquire(3);
    ASSERT_TRUE(permits);
    redcoord::rw_lock rw(pool, "config");
    ASSERT_TRUE(rw.try_lock_shared());

    cli_process board(
        {"--redis", server.url(), "dashboard", "--listen", "127.0.0.1:0", "--refresh", "500ms"},
        dir.file("board.out"));
    const auto port = served_port(board);
    ASSERT_TRUE(port) << board.output();
    const std::string url = "http://127.0.0.1:" + std::to_string(*port) + "/";

    const auto dom = chromium(*exe, dir, url, "--dump-dom", "4000");
    // The script ran and filled every section from /api.
    ASSERT_TRUE(contains(dom, "data-loaded=\"true\"")) << dom;
    EXPECT_TRUE(contains(dom, "<tr data-name=\"orders\">")) << dom;
    EXPECT_TRUE(
        contains(dom, "<span>" + redcoord::lock_holder_fingerprint(held->token) + "</span>"))
        << dom;
    EXPECT_FALSE(contains(dom, held->token)) << "a lock token reached the page";
    EXPECT_TRUE(contains(dom, "<tr data-name=\"scheduler\">")) << dom;
    EXPECT_TRUE(contains(dom, "<td data-col=\"epoch\"><span>" + std::to_string(elector.epoch())))
        << dom;
    // The candidates (issue 38): the leader is the one candidate, its identity escaped.
    EXPECT_TRUE(contains(dom,
                         "<td data-col=\"candidates\"><ul><li><span class=\"obj\"><span "
                         "class=\"kv\"><span class=\"k\">identity: </span><span>&lt;img"))
        << dom;
    EXPECT_TRUE(contains(dom, "<tr data-name=\"mail\">")) << dom;
    EXPECT_TRUE(contains(dom, "<td data-col=\"dead\"><span>1</span></td>")) << dom;
    EXPECT_TRUE(contains(dom, "<tr data-name=\"reports\">")) << dom;
    // The limiters with their state: held permits and holders, readers.
    EXPECT_TRUE(contains(dom, "<tr data-name=\"workers\">")) << dom;
    EXPECT_TRUE(contains(dom, "<span class=\"k\">held: </span><span>3</span>")) << dom;
    // Read-only: no button, no token box (the bar stays hidden and empty).
    EXPECT_FALSE(contains(dom, "<button")) << dom;
    EXPECT_TRUE(contains(dom, "<div id=\"actionbar\" hidden=\"\"></div>")) << dom;
    EXPECT_TRUE(contains(dom, "<tr data-name=\"config\">")) << dom;
    EXPECT_TRUE(contains(dom, "<span class=\"k\">readers: </span><ul><li>")) << dom;
    // Stored markup is shown as text (escaped in the serialized DOM), never as elements...
    EXPECT_TRUE(contains(dom, "&lt;img src=x onerror=\"document.title='pwned'\"&gt;")) << dom;
    EXPECT_TRUE(contains(dom, "&lt;script&gt;document.body.dataset.pwned='yes'&lt;/script&gt;"))
        << dom;
    EXPECT_FALSE(contains(dom, "<img")) << dom;
    EXPECT_EQ(count(dom, "<script"), 1u) << "only the page's own app.js";
    // ...and never runs: the title and the body are as the page left them.
    EXPECT_TRUE(contains(dom, "<title>redcoord dashboard</title>")) << dom;
    EXPECT_FALSE(contains(dom, "pwned=\"yes\"")) << dom;
    EXPECT_FALSE(contains(dom, "data-pwned")) << dom;

    // A picture of the page for people (README, docs/dashboard.md).
    const std::string png = std::string(REDCOORD_BROWSER_OUT) + "/dashboard.png";
    std::filesystem::remove(png);
    (void)chromium(*exe, dir, url, "--screenshot=" + png, "4000");
    ASSERT_TRUE(std::filesystem::exists(png));
    EXPECT_GT(std::filesystem::file_size(png), 10000u);

    board.signal(SIGTERM);
    EXPECT_EQ(board.wait_for(10s), std::optional<int>(0)) << board.output();
}

namespace {

// A PNG of the whole page, written to the build folder for people (README, docs).
void shot(browser_test::devtools_browser& b, const std::string& name) {
    const std::string png = std::string(REDCOORD_BROWSER_OUT) + "/" + name;
    std::filesystem::remove(png);
    b.screenshot(png);
    ASSERT_TRUE(std::filesystem::exists(png));
    EXPECT_GT(std::filesystem::file_size(png), 10000u);
}

}  // namespace

TEST_F(BrowserDashboard, ActionsAreRefusedWithoutTheTokenAndUpdateThePageWithIt) {
    if (!exe) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";

    redcoord::job_queue jobs(pool, "reports");
    fail_job(jobs, "xss", "<img src=x onerror=alert(1)><script>alert(2)</script>");
    auto queue = queue_with_dead_letter("<script>alert(3)</script>");

    const std::string token = "browser-test-token-" + redcoord::random_token().substr(0, 16);
    { std::ofstream(dir.file("token")) << token << "\n"; }
    cli_process board({"--redis", server.url(), "dashboard", "--listen", "127.0.0.1:0", "--refresh",
                       "500ms", "--allow-actions", "--token-file", dir.file("token")},
                      dir.file("board.out"));
    browser_test::devtools_browser b(*exe, dir);
    ASSERT_TRUE(open_board(board, b));
    const std::string retry =
        "document.querySelector('#jobs button[data-action=\"job/retry\"]"
        "[data-id=\"xss\"]')";
    ASSERT_TRUE(b.wait_true(retry + " !== null"));
    EXPECT_EQ(b.eval("document.getElementById('token-state').textContent"),
              "no token: actions will be refused");

    // Without the token: refused, said on the page, nothing changed.
    b.eval(retry + ".click()");
    ASSERT_TRUE(b.wait_true("document.getElementById('action-status').dataset.result === '403'"))
        << b.eval("document.getElementById('action-status').textContent");
    EXPECT_EQ(jobs.get("xss")->state, redcoord::job_state::failed);

    // With the token: it is kept out of the DOM, and the retry shows at once.
    b.eval("(() => { const t = document.getElementById('token'); t.value = " +
           browser_test::json_quote(token) +
           "; document.getElementById('token-use').click(); })()");
    EXPECT_EQ(b.eval("document.getElementById('token').value"), "");
    EXPECT_EQ(b.eval("document.getElementById('token-state').textContent"), "token set");
    EXPECT_EQ(b.eval("sessionStorage.getItem('redcoord-dashboard-token') === " +
                     browser_test::json_quote(token)),
              "true");
    EXPECT_EQ(b.eval("document.documentElement.outerHTML.includes(" +
                     browser_test::json_quote(token) + ")"),
              "false");
    shot(b, "dashboard-actions.png");  // the buttons, before anything changed
    b.eval(retry + ".click()");
    ASSERT_TRUE(b.wait_true("document.getElementById('action-status').dataset.result === 'ok'"))
        << b.eval("document.getElementById('action-status').textContent");
    EXPECT_EQ(jobs.get("xss")->state, redcoord::job_state::waiting);
    EXPECT_TRUE(b.wait_true(retry + " === null"));
    EXPECT_TRUE(
        b.wait_true("document.querySelector('#jobs tr[data-name=\"reports\"] "
                    "td[data-col=\"counts\"]').textContent.includes('waiting: 1')"))
        << b.eval("document.querySelector('#jobs').textContent");

    // Requeue the queue's dead letter from its row.
    const std::string requeue =
        "document.querySelector('#queues button[data-action=\"queue/requeue-dead\"]')";
    ASSERT_TRUE(b.wait_true(requeue + " !== null"));
    b.eval(requeue + ".click()");
    EXPECT_TRUE(
        b.wait_true("document.querySelector('#queues tr[data-name=\"mail\"] "
                    "td[data-col=\"dead\"]').textContent === '0'"));
    EXPECT_EQ(queue->stats().dead, 0u);

    // Pause from the jobs row: the button turns into Resume.
    b.eval("document.querySelector('#jobs button[data-action=\"jobs/pause\"]').click()");
    EXPECT_TRUE(
        b.wait_true("document.querySelector('#jobs button[data-action=\"jobs/resume\"]') !== "
                    "null"));
    EXPECT_TRUE(jobs.paused());

    // Clean asks in the page first: Cancel deletes nothing, Delete them cleans.
    fail_job(jobs, "old", "to be cleaned");
    const std::string clean =
        "document.querySelector('#jobs button[data-action=\"jobs/clean\"]"
        "[data-state=\"failed\"]')";
    ASSERT_TRUE(b.wait_true(clean + " !== null"));
    b.eval(clean + ".click()");
    ASSERT_TRUE(b.wait_true("!document.getElementById('confirm').hidden"));
    EXPECT_EQ(b.eval("document.getElementById('confirm').dataset.state"), "failed");
    EXPECT_TRUE(contains(b.eval("document.getElementById('confirm').textContent"),
                         "Delete every failed job of queue"));
    b.eval("document.getElementById('confirm-no').click()");
    EXPECT_TRUE(b.wait_true("document.getElementById('confirm').hidden"));
    EXPECT_EQ(jobs.get("old")->state, redcoord::job_state::failed);
    b.eval(clean + ".click()");
    ASSERT_TRUE(b.wait_true("!document.getElementById('confirm').hidden"));
    b.eval("document.getElementById('confirm-yes').click()");
    ASSERT_TRUE(
        b.wait_true("document.getElementById('action-status').textContent"
                    ".includes('jobs/clean')"));
    EXPECT_TRUE(b.wait_true("document.getElementById('action-status').dataset.result === 'ok'"))
        << b.eval("document.getElementById('action-status').textContent");
    EXPECT_FALSE(jobs.get("old").has_value());

    // The stored markup never ran: no dialog opened, and it shows as text.
    EXPECT_TRUE(b.events("Page.javascriptDialogOpening").empty());
    EXPECT_EQ(b.eval("document.querySelectorAll('img').length"), "0");
    EXPECT_EQ(b.eval("document.querySelectorAll('script').length"), "1");
    EXPECT_EQ(b.eval("document.title"), "redcoord dashboard");

    shot(b, "dashboard-after-actions.png");

    board.signal(SIGTERM);
    EXPECT_EQ(board.wait_for(10s), std::optional<int>(0)) << board.output();
    // Every action was logged, the refused one too, never with the token.
    const auto log = board.output();
    EXPECT_TRUE(contains(log, "action=job/retry name=reports id=xss refused=")) << log;
    EXPECT_TRUE(contains(log, "action=job/retry name=reports id=xss outcome=retried")) << log;
    EXPECT_TRUE(contains(log, "action=queue/requeue-dead name=mail")) << log;
    EXPECT_FALSE(contains(log, token)) << log;
}

// The read-only user of `redcoord acl-rules --inspect`: `redcoord dashboard` logged in as it
// serves the page and every api/ route, the failed job lists included, and chromium shows them.
TEST_F(BrowserDashboard, ThePageAndEveryRouteWorkUnderTheInspectUser) {
    redcoord::distributed_lock lock(pool, "orders");
    ASSERT_TRUE(lock.acquire(5s));
    redcoord::job_queue jobs(pool, "reports");
    fail_job(jobs, "broken", "x");
    redcoord::semaphore sem(pool, "workers");
    auto permit = sem.try_acquire();
    ASSERT_TRUE(permit);
    auto queue = queue_with_dead_letter("m");

    // The line an administrator pastes, word by word (none holds a space).
    const auto rules = run(dir, {"acl-rules", "--inspect", "--user", "viewer"});
    ASSERT_EQ(rules.status, code::ok) << rules.output;
    std::vector<std::string> argv;
    std::istringstream words(rules.output);
    for (std::string w; words >> w;) argv.push_back(w);
    argv.push_back(">viewer-pass");
    redcoord::connection admin(server.endpoint());
    ASSERT_EQ(admin.command(argv).text(), "OK");
    auto ep = server.endpoint();
    ep.user = "viewer";
    ep.password = "viewer-pass";

    // The server's own URL (TLS options included) with the user's password, which
    // endpoint::to_string() masks.
    auto bare = ep;
    bare.password.clear();
    std::string url = bare.to_string();
    url.insert(url.find("viewer@") + 6, ":viewer-pass");
    cli_process board({"--redis", url, "dashboard", "--listen", "127.0.0.1:0"},
                      dir.file("board.out"));
    const auto port = served_port(board);
    ASSERT_TRUE(port) << board.output();
    for (const char* route :
         {"/", "/app.js", "/app.css", "/api/locks", "/api/elections", "/api/queues", "/api/jobs",
          "/api/barriers", "/api/limits", "/api/actions", "/api/jobs/list?name=reports&state=dead",
          "/healthz", "/readyz", "/metrics"}) {
        const auto r = redcoord::testing::http_test::get(*port, route);
        EXPECT_EQ(r.result(), redcoord::testing::http_test::http::status::ok) << route;
        EXPECT_FALSE(contains(r.body(), "permission denied")) << route << ": " << r.body();
        EXPECT_FALSE(contains(r.body(), "NOPERM")) << route << ": " << r.body();
        EXPECT_FALSE(contains(r.body(), "\"jobs_error\":")) << route << ": " << r.body();
    }
    const auto jobs_json = redcoord::testing::http_test::get(*port, "/api/jobs").body();
    EXPECT_TRUE(contains(jobs_json, R"("failed_jobs":[{"id":"broken")")) << jobs_json;
    EXPECT_TRUE(contains(redcoord::testing::http_test::get(*port, "/api/queues").body(),
                         R"("name":"mail","ready":0,"dead":1)"));
    // The user can read and nothing else: an action through its own connection is refused.
    redcoord::connection viewer(ep);
    EXPECT_THROW((void)viewer.command({"DEL", "redcoord:jobs:{reports}:failed"}), redcoord::error);

    if (exe) {
        const auto page = "http://127.0.0.1:" + std::to_string(*port) + "/";
        const auto dom = chromium(*exe, dir, page, "--dump-dom", "3000");
        ASSERT_TRUE(contains(dom, "data-loaded=\"true\"")) << dom;
        EXPECT_TRUE(contains(dom, "<tr data-name=\"reports\">")) << dom;
        EXPECT_TRUE(contains(dom, "<span>broken</span>")) << dom;
        EXPECT_TRUE(contains(dom, "<tr data-name=\"workers\">")) << dom;
        EXPECT_FALSE(contains(dom, "cannot read")) << dom;
    }
    board.signal(SIGTERM);
    EXPECT_EQ(board.wait_for(10s), std::optional<int>(0)) << board.output();
}

// Flows and paging in the page (issues 37, 38): a waiting parent is listed with what it waits
// for, its child with who waits for it; a failed list longer than a page gets a Next link that
// shows the next page, kept across refreshes, and a Previous link back.
TEST_F(BrowserDashboard, ShowsFlowsAndPagesThroughFailedJobs) {
    if (!exe) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";

    redcoord::job_queue jobs(pool, "reports");
    for (int i = 0; i < 12; ++i)
        fail_job(jobs, "f" + std::string(i < 10 ? "0" : "") + std::to_string(i), "x");
    redcoord::flow_job root{"summary", {.id = "summary"}, {}};
    root.children.push_back({"part", {.id = "part"}, {}});
    (void)jobs.add_flow(root);
    (void)jobs.set_group_limit("acme", 2);
    redcoord::job_options grouped;
    grouped.group = "acme";
    (void)jobs.add("g", grouped);

    cli_process board(
        {"--redis", server.url(), "dashboard", "--listen", "127.0.0.1:0", "--refresh", "500ms"},
        dir.file("board.out"));
    browser_test::devtools_browser b(*exe, dir);
    ASSERT_TRUE(open_board(board, b));
    const std::string waiting =
        "document.querySelector('#jobs td[data-col=\"waiting_children_jobs\"] "
        "li[data-id=\"summary\"]')";
    ASSERT_TRUE(b.wait_true(waiting + " !== null"))
        << b.eval("document.querySelector('#jobs').textContent");
    EXPECT_TRUE(contains(b.eval(waiting + ".textContent"), "pending_dependencies: part"))
        << b.eval(waiting + ".textContent");
    EXPECT_TRUE(
        contains(b.eval("document.querySelector('#jobs td[data-col=\"counts\"]').textContent"),
                 "waiting_children: 1"));
    // Groups (issue 37): each group's ready and active jobs and its limit.
    const auto groups =
        b.eval("document.querySelector('#jobs td[data-col=\"groups\"]').textContent");
    EXPECT_TRUE(contains(groups, "name: acme")) << groups;
    EXPECT_TRUE(contains(groups, "waiting: 1")) << groups;
    EXPECT_TRUE(contains(groups, "limit: 2")) << groups;

    const std::string failed = "document.querySelector('#jobs td[data-col=\"failed_jobs\"]')";
    // "1-10 of 12" (an en dash, which eval() returns as '?').
    EXPECT_TRUE(contains(b.eval(failed + ".textContent"), "10 of 12 Next"))
        << b.eval(failed + ".textContent");
    EXPECT_EQ(b.eval(failed + ".querySelectorAll('li').length"), "10");
    b.eval(failed + ".querySelector('a[rel=\"next\"]').click()");
    ASSERT_TRUE(b.wait_true(failed + ".querySelector('li[data-id=\"f11\"]') !== null"))
        << b.eval(failed + ".textContent");
    EXPECT_EQ(b.eval(failed + ".querySelectorAll('li').length"), "2");
    // The page stays on the second page across refreshes (500 ms).
    std::this_thread::sleep_for(1500ms);
    EXPECT_TRUE(b.wait_true(failed + ".querySelector('li[data-id=\"f10\"]') !== null"))
        << b.eval(failed + ".textContent");
    b.eval(failed + ".querySelector('a[rel=\"prev\"]').click()");
    EXPECT_TRUE(b.wait_true(failed + ".querySelector('li[data-id=\"f00\"]') !== null"))
        << b.eval(failed + ".textContent");
    shot(b, "dashboard-flows.png");

    board.signal(SIGTERM);
    EXPECT_EQ(board.wait_for(10s), std::optional<int>(0)) << board.output();
}
