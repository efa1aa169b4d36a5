#pragma once
/// @file
/// A web dashboard of every redcoord primitive under a key prefix: one HTML page and a small
/// script, embedded (no CDN, works offline), refreshed through JSON under `api/`; read-only
/// unless actions are turned on with a token (dashboard_options::allow_actions).
/// Mount it on metrics_server next to `/metrics` (metrics_server_options::handlers), or serve
/// it with `redcoord dashboard --listen 127.0.0.1:8080`.

#include <redcoord/core/acl.hpp>
#include <redcoord/core/export.hpp>
#include <redcoord/core/pool.hpp>
#include <redcoord/http/route.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

REDCOORD_API_BEGIN
namespace redcoord {

/// What the dashboard shows and how much it reads per request.
struct dashboard_options {
    /// The key prefix of the primitives shown (the `prefix` of their options).
    std::string prefix = "redcoord:";
    /// The path the dashboard is mounted at, starting and ending with `/`: the page is served
    /// at `base_path`, its JSON at `base_path + "api/locks"` and so on.
    std::string base_path = "/";
    /// Names gathered per `api/` page before it is answered (a last SCAN batch may add a few
    /// more). The answer's `next` cursor continues the scan. > 0.
    std::size_t page_size = 50;
    /// The `COUNT` hint of each SCAN call. > 0.
    std::size_t scan_count = 100;
    /// Most SCAN calls per page, over all masters (a prefix holding many other keys yields a
    /// short page and a `next` cursor rather than a long request). > 0.
    std::size_t max_scan_calls = 20;
    /// Most bytes of any one value shown (a payload, an error, an identity); a longer value
    /// is cut and followed by ` … [N bytes]`. > 0.
    std::size_t max_value_bytes = 512;
    /// Jobs per page of a job queue's failed, dead and waiting_children lists (oldest first,
    /// pages by `api/jobs/list?name=&state=&offset=`), each with its error, attempts, payload
    /// preview and flow (dependencies, pending ones, dependents).
    std::size_t jobs_listed = 10;
    /// How often the page fetches fresh data, in milliseconds. > 0.
    std::chrono::milliseconds refresh{2000};
    /// Host names the page may be asked for (the `Host` header, port ignored, compared
    /// without regard to case), besides `localhost` and IP literals, which are always served.
    /// Any other name gets 403: a web page elsewhere cannot reach the dashboard through a
    /// name of its own that resolves to loopback (DNS rebinding). Add the name a proxy or
    /// users reach the dashboard by.
    std::vector<std::string> allowed_hosts;
    /// Serve the actions (retry, cancel or remove a job, clean a job state, pause or resume a
    /// job queue, requeue a reliable queue's dead letters) under `api/actions/`. Off by
    /// default: every action route then answers 403. Needs a non-empty `action_token`.
    bool allow_actions = false;
    /// The secret an action request must carry as `Authorization: Bearer <token>` (compared
    /// in constant time). Never shown by the dashboard nor written to its log.
    std::string action_token;
    /// Largest action request body, in bytes; a larger one gets 413. > 0.
    std::size_t max_action_body_bytes = 4096;
};

/// Serves the dashboard page and its JSON, and, when enabled, the operator's actions.
///
/// Routes (under `base_path`): the page (`""` and `index.html`), `app.js`, `app.css`, and
/// `api/locks`, `api/elections`, `api/queues`, `api/jobs`, `api/barriers`, `api/limits`.
/// Each `api/` route answers `{"prefix":..,"items":[..],"next":CURSOR|null}`; pass
/// `?cursor=CURSOR` for the next page. Primitives are discovered by SCAN with MATCH over the
/// prefix (a cursor per page, never KEYS; on a Redis Cluster every master is scanned in
/// turn), and each is read with its part's inspect function (inspect_lock(),
/// inspect_election(), inspect_queue(), inspect_jobs() with job_queue::list() and get(),
/// inspect_barrier(), and for `api/limits` inspect_semaphore() (held, N and permits left as
/// the latest acquisition stored N, holders with fingerprint, count and lease left, waiters,
/// fencing counter), inspect_rw_lock() (writer, readers, waiting writers and readers, fencing
/// counter), inspect_rate_limiter() (idle, burst and units left as the latest admission
/// stored them, time until full again) and inspect_sliding_window() (units used and left,
/// limit and window as stored, time until empty)). A primitive that cannot be
/// read (an ACL refusal) is listed with an
/// `error` instead of failing the page.
///
/// Actions (dashboard_options::allow_actions): `POST api/actions/<action>` with a form-encoded
/// body, for `job/retry`, `job/cancel`, `job/remove` (`name`, `id`), `jobs/clean` (`name`,
/// `state` completed|failed|dead, `older_than_ms`, `limit`), `jobs/pause`, `jobs/resume`
/// (`name`) and `queue/requeue-dead` (`name`, `limit`; 0 or absent: all). Each runs one
/// call of job_queue or reliable_queue and answers its outcome as JSON. A request must carry
/// `Authorization: Bearer <action_token>` and the header `X-Redcoord-CSRF` with this
/// process's CSRF token (random, made at construction, embedded in the page and answered by
/// `GET api/actions`), and an `Origin` header, when sent, must name the `Host` it was sent to.
/// Answers: 405 for a method other than POST (with actions off too), 403 when actions are off,
/// the origin is foreign, or the token or the CSRF token is missing or wrong, 413 for a body
/// over max_action_body_bytes, 400 for a bad parameter. With actions on, every POST to an
/// action route, refused or run, is logged through the pool's runtime log sink (component
/// `dashboard`: `action`, `name`, `id`, and `outcome` or `refused`; never a token).
///
/// Security: read-only unless actions are on (GET and HEAD only; anything else is 405); a
/// `Host` that is neither `localhost`, an IP literal nor in `allowed_hosts` gets 403 (action
/// routes included); lock tokens are never
/// shown, only holder fingerprints (lock_holder_fingerprint()); every string in the JSON is
/// escaped, `<`, `>` and `&` included, and cut at max_value_bytes; the page builds its DOM
/// with `textContent` only and is served with a Content-Security-Policy that allows no inline
/// script, so a payload such as `<script>alert(1)</script>` shows as text. Bind the server to
/// loopback (the default of metrics_server and of `redcoord dashboard`).
///
/// Thread-safety: handle() may be called from any thread, concurrently; each call borrows
/// from the pool (and from one pool per Cluster master, made on first use). Errors reaching
/// Redis become 502 answers naming the endpoint (password masked).
class dashboard {
public:
    /// A dashboard of the primitives under `opts.prefix` on the server (Sentinel service, or
    /// Cluster) behind `pool`.
    /// @throws invalid_argument for a null pool, a `base_path` that does not start and end
    ///         with `/`, a zero size, count or interval, or allow_actions without an
    ///         action_token.
    explicit dashboard(std::shared_ptr<connection_pool> pool, dashboard_options opts = {});
    ~dashboard();
    dashboard(const dashboard&) = delete;
    dashboard& operator=(const dashboard&) = delete;

    /// Answers a request for one of the dashboard's routes; nothing for other paths.
    [[nodiscard]] std::optional<http_response> handle(const http_request& req) const;

    /// handle() as an http_handler for metrics_server_options::handlers; it keeps the
    /// dashboard's state alive (the dashboard object itself may go first).
    [[nodiscard]] http_handler handler() const;

    /// The options given at construction.
    [[nodiscard]] const dashboard_options& options() const noexcept;

private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

/// What a read-only ACL user needs to serve the dashboard's page and every `api/` route
/// (`redcoord acl-rules --inspect` prints these): what `redcoord inspect` reads of every part
/// (lock_inspect_acl_needs(), limit_inspect_acl_needs() and the others), SCAN for discovery,
/// and ZRANGE, HGETALL, GET and ZSCORE for the lists of failed and dead jobs
/// (job_queue::list() and the read-only script of job_queue::get()). Only commands that
/// read: actions need the parts' own needs (jobs_acl_needs(), queue_acl_needs()).
/// @param prefix the key prefix of the primitives shown (dashboard_options::prefix).
/// @param db the database number the endpoint selects (SELECT is granted when it is not 0).
[[nodiscard]] acl_needs dashboard_acl_needs(std::string_view prefix = "redcoord:", int db = 0);

}  // namespace redcoord
REDCOORD_API_END
