#include "page.hpp"

namespace redcoord::detail {

namespace {

// The script builds every element with createElement and fills it with textContent only:
// no value from Redis ever reaches innerHTML, so a payload is shown as the text it is.
constexpr std::string_view script = R"JS('use strict';
const REFRESH = Number(document.body.dataset.refresh) || 2000;
const MAX_PAGES = 10;
// Present only when the server allows actions; sent back in a custom header (CSRF).
const CSRF = document.body.dataset.csrf || '';
const ACTIONS = CSRF !== '';
// The action token stays in this tab's sessionStorage and is only ever sent in a header.
const TOKEN_KEY = 'redcoord-dashboard-token';

const SECTIONS = [
  {id: 'locks', title: 'Locks', cols: [
    ['name', 'Name'], ['held', 'Held'], ['holder', 'Holder (fingerprint)'],
    ['label', 'Held by'], ['ttl_left_ms', 'TTL left'], ['fencing_counter', 'Fencing counter'],
    ['release_notice', 'Waiter notified'], ['fair_queue_length', 'Fair queue'],
    ['turn_owner', 'Turn']]},
  {id: 'elections', title: 'Elections', cols: [
    ['name', 'Name'], ['leader', 'Leader'], ['epoch', 'Epoch'], ['term_left_ms', 'Term left'],
    ['rounds', 'Rounds this term'], ['last_epoch', 'Last epoch'], ['candidates', 'Candidates']]},
  {id: 'queues', title: 'Queues', cols: [
    ['name', 'Name'], ['ready', 'Ready'], ['in_flight', 'In flight'], ['dead', 'Dead'],
    ['oldest_ready_age_ms', 'Oldest ready'], ['consumers', 'Consumers']],
   actions: item => item.dead > 0 ? [button('Requeue dead', 'queue/requeue-dead',
                                            {name: item.name})] : []},
  {id: 'jobs', title: 'Jobs', cols: [
    ['name', 'Queue'], ['counts', 'Counts'], ['oldest_waiting_age_ms', 'Oldest waiting'],
    ['scheduler', 'Scheduler'], ['repeats', 'Repeats'], ['groups', 'Groups'],
    ['failed_jobs', 'Failed jobs'],
    ['dead_jobs', 'Dead jobs'], ['waiting_children_jobs', 'Waiting for children'],
    ['paused', 'Paused']],
   actions: item => [
     item.paused ? button('Resume', 'jobs/resume', {name: item.name})
                 : button('Pause', 'jobs/pause', {name: item.name}),
     cleanButton(item.name, 'failed'), cleanButton(item.name, 'dead'),
     cleanButton(item.name, 'completed')]},
  {id: 'barriers', title: 'Barriers', cols: [
    ['name', 'Name'], ['generation', 'Generation'], ['parties', 'Parties'],
    ['arrivals', 'Arrived'], ['lapsed', 'Lapsed']]},
  {id: 'limits', title: 'Semaphores, read-write locks and rate limiters', cols: [
    ['kind', 'Kind'], ['name', 'Name'], ['*', 'State']]},
];

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function duration(ms) {
  if (ms === null || ms === undefined) return '\u2014';
  if (ms < 1000) return ms + ' ms';
  if (ms < 120000) return (ms / 1000).toFixed(1) + ' s';
  if (ms < 7200000) return Math.round(ms / 60000) + ' min';
  return Math.round(ms / 3600000) + ' h';
}

// A cell's content as DOM nodes: scalars as text, lists as list items, objects as key: value.
function render(key, v) {
  if (v === null || v === undefined) return el('span', '\u2014', 'none');
  if (key.endsWith('_at_ms')) return el('span', new Date(v).toISOString().slice(0, 19) + 'Z');
  if (key.endsWith('_ms')) return el('span', duration(v));
  if (Array.isArray(v)) {
    if (v.length === 0) return el('span', '\u2014', 'none');
    const ul = el('ul');
    for (const item of v) {
      const li = el('li');
      li.appendChild(render('', item));
      ul.appendChild(li);
    }
    return ul;
  }
  if (typeof v === 'object') {
    const span = el('span', null, 'obj');
    for (const [k, x] of Object.entries(v)) {
      const part = el('span', null, 'kv');
      part.appendChild(el('span', k + ': ', 'k'));
      part.appendChild(render(k, x));
      span.appendChild(part);
    }
    return span;
  }
  return el('span', v);
}

async function fetchAll(id) {
  let items = [];
  let cursor = '';
  for (let page = 0; page < MAX_PAGES; ++page) {
    const url = 'api/' + id + (cursor ? '?cursor=' + encodeURIComponent(cursor) : '');
    const res = await fetch(url, {cache: 'no-store'});
    if (!res.ok) throw new Error(res.status + ' ' + (await res.text()));
    const body = await res.json();
    items = items.concat(body.items);
    if (body.next === null) return {items: items, more: false};
    cursor = body.next;
  }
  return {items: items, more: true};
}

function dedupe(items) {
  const seen = new Set();
  return items.filter(i => {
    const k = i.kind + '\u0000' + i.name;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

// What an item holds besides its kind, name and error (the limiters differ per kind).
function rest(item) {
  const out = {};
  for (const [k, v] of Object.entries(item))
    if (k !== 'kind' && k !== 'name' && k !== 'error') out[k] = v;
  return out;
}

function table(section, items) {
  const t = el('table');
  const head = el('tr');
  for (const [, title] of section.cols) head.appendChild(el('th', title));
  head.appendChild(el('th', 'Error'));
  if (ACTIONS && section.actions) head.appendChild(el('th', 'Actions'));
  t.appendChild(el('thead')).appendChild(head);
  const body = t.appendChild(el('tbody'));
  for (const item of items) {
    const tr = el('tr');
    tr.dataset.name = item.name;
    for (const [key] of section.cols) {
      const td = el('td');
      td.dataset.col = key;
      if (key === '*')
        td.appendChild(render('', rest(item)));
      else if (section.id === 'jobs' && key.endsWith('_jobs') && Array.isArray(item[key]))
        jobCell(td, item, key.slice(0, -5));
      else
        td.appendChild(render(key, item[key]));
      tr.appendChild(td);
    }
    tr.appendChild(el('td', item.error || item.jobs_error || '', 'error'));
    if (ACTIONS && section.actions) {
      const td = el('td', null, 'actions');
      for (const b of section.actions(item)) td.appendChild(b);
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  return t;
}

async function refreshSection(section) {
  const box = document.getElementById(section.id);
  const content = el('div');
  try {
    const got = await fetchAll(section.id);
    const items = dedupe(got.items).sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    content.appendChild(el('p', items.length + (got.more ? '+' : '') + ' found', 'count'));
    if (items.length > 0) content.appendChild(table(section, items));
  } catch (e) {
    content.appendChild(el('p', 'cannot read: ' + e.message, 'error'));
  }
  box.replaceChildren(el('h2', section.title), content);
}

async function refreshNow() {
  await Promise.all(SECTIONS.map(refreshSection));
  document.getElementById('updated').textContent =
      'updated ' + new Date().toLocaleTimeString();
  document.body.dataset.loaded = 'true';
}

async function refresh() {
  await refreshNow();
  setTimeout(refresh, REFRESH);
}

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

function showTokenState() {
  document.getElementById('token-state').textContent =
      token() ? 'token set' : 'no token: actions will be refused';
}

// Runs one action, says what came back, and shows the new state at once.
async function act(action, params) {
  const status = document.getElementById('action-status');
  const what = action + ' ' + params.name + (params.id ? ' ' + params.id : '');
  const headers = {'X-Redcoord-CSRF': CSRF};
  if (token()) headers['Authorization'] = 'Bearer ' + token();
  try {
    const res = await fetch('api/actions/' + action,
                            {method: 'POST', headers: headers, cache: 'no-store',
                             body: new URLSearchParams(params)});
    const answer = await res.text();
    status.textContent = what + (res.ok ? ': ' : ': refused (' + res.status + ') ') + answer;
    status.className = res.ok ? 'ok' : 'error';
    status.dataset.result = res.ok ? 'ok' : String(res.status);
  } catch (e) {
    status.textContent = what + ': ' + e.message;
    status.className = 'error';
    status.dataset.result = 'failed';
  }
  await refreshNow();
}

function button(label, action, params) {
  const b = el('button', label, 'action');
  b.type = 'button';
  b.dataset.action = action;
  b.dataset.name = params.name;
  if (params.id) b.dataset.id = params.id;
  b.addEventListener('click', () => act(action, params));
  return b;
}

// Cleaning deletes jobs for good: the button only asks, in the page (#confirm), and the
// request carries the confirmed state (the server refuses a clean without it).
function cleanButton(queue, state) {
  const b = el('button', 'Clean ' + state, 'action');
  b.type = 'button';
  b.dataset.action = 'jobs/clean';
  b.dataset.name = queue;
  b.dataset.state = state;
  b.addEventListener('click', () => askClean(queue, state));
  return b;
}

function askClean(queue, state) {
  const box = document.getElementById('confirm');
  const yes = el('button', 'Delete them', 'action');
  yes.type = 'button';
  yes.id = 'confirm-yes';
  const no = el('button', 'Cancel', 'action');
  no.type = 'button';
  no.id = 'confirm-no';
  const close = () => { box.replaceChildren(); box.hidden = true; };
  yes.addEventListener('click', () => {
    close();
    act('jobs/clean', {name: queue, state: state, confirm: state});
  });
  no.addEventListener('click', close);
  box.replaceChildren(el('span', 'Delete every ' + state + ' job of queue \u201c' + queue +
                                 '\u201d? This cannot be undone. '), yes, no);
  box.dataset.queue = queue;
  box.dataset.state = state;
  box.hidden = false;
}

// The page of each job list the user moved to, by queue and state (absent: the first, which
// the section's own data holds); kept across refreshes.
const OFFSETS = new Map();
// The last list read for such a later page, shown again while a refresh fetches it anew, so
// that a refresh never blanks the list or its Previous / Next links.
const PAGES = new Map();

// A failed, dead or waiting_children job list (with each job's dependencies and dependents),
// a retry and a remove button per job when actions are on, and Previous / Next links when the
// state holds more than one page (api/jobs/list?name=&state=&offset=).
function jobList(queue, state, jobs, offset, total, limit) {
  const box = el('div', null, 'joblist');
  box.dataset.state = state;
  if (jobs.length === 0) {
    box.appendChild(el('span', '\u2014', 'none'));
  } else {
    const ul = el('ul');
    for (const job of jobs) {
      const li = el('li');
      li.dataset.id = job.id;
      li.appendChild(render('', job));
      if (ACTIONS) {
        li.appendChild(button('Retry', 'job/retry', {name: queue, id: job.id}));
        li.appendChild(button('Remove', 'job/remove', {name: queue, id: job.id}));
      }
      ul.appendChild(li);
    }
    box.appendChild(ul);
  }
  if (limit > 0 && total > limit) {
    const pager = el('div', (offset + 1) + '\u2013' + Math.min(total, offset + jobs.length) +
                     ' of ' + total + ' ', 'pager');
    const link = (label, to, rel) => {
      const a = el('a', label, 'page-link');
      a.href = '#';
      a.rel = rel;
      a.addEventListener('click', ev => {
        ev.preventDefault();
        OFFSETS.set(queue + '\u0000' + state, to);
        showPage(box, queue, state, to);
      });
      pager.appendChild(a);
    };
    if (offset > 0) link('Previous', Math.max(0, offset - limit), 'prev');
    if (offset + limit < total) link('Next', offset + limit, 'next');
    box.appendChild(pager);
  }
  return box;
}

async function showPage(box, queue, state, offset) {
  try {
    const res = await fetch('api/jobs/list?name=' + encodeURIComponent(queue) + '&state=' +
                            state + '&offset=' + offset, {cache: 'no-store'});
    if (!res.ok) throw new Error(res.status + ' ' + (await res.text()));
    const p = await res.json();
    PAGES.set(queue + '\u0000' + state, p);
    box.replaceWith(jobList(queue, state, p.jobs, p.offset, p.total, p.limit));
  } catch (e) {
    box.replaceChildren(el('span', 'cannot read: ' + e.message, 'error'));
  }
}

function jobCell(td, item, state) {
  const offset = OFFSETS.get(item.name + '\u0000' + state) || 0;
  const total = (item.counts || {})[state] || 0;
  if (offset === 0) {
    td.appendChild(jobList(item.name, state, item[state + '_jobs'], 0, total,
                           item.jobs_listed || 0));
    return;
  }
  // A later page the user moved to: fetched again at each refresh.
  const last = PAGES.get(item.name + '\u0000' + state);
  const box = last && last.offset === offset
                  ? jobList(item.name, state, last.jobs, last.offset, last.total, last.limit)
                  : el('div', '\u2026', 'joblist');
  td.appendChild(box);
  showPage(box, item.name, state, offset);
}

// The token box and a form for a job by id, outside the refreshed sections so that nothing
// typed is wiped by a refresh.
function actionBar() {
  const bar = document.getElementById('actionbar');
  const input = el('input');
  input.type = 'password';
  input.id = 'token';
  input.autocomplete = 'off';
  input.placeholder = 'action token';
  const use = el('button', 'Use token');
  use.type = 'button';
  use.id = 'token-use';
  use.addEventListener('click', () => {
    if (input.value) sessionStorage.setItem(TOKEN_KEY, input.value);
    input.value = '';
    showTokenState();
  });
  const forget = el('button', 'Forget token');
  forget.type = 'button';
  forget.id = 'token-forget';
  forget.addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showTokenState();
  });
  const queue = el('input');
  queue.id = 'job-queue';
  queue.placeholder = 'job queue';
  const id = el('input');
  id.id = 'job-id';
  id.placeholder = 'job id';
  const byId = el('span', null, 'by-id');
  byId.append(queue, id);
  for (const [label, action] of [['Cancel job', 'job/cancel'], ['Retry job', 'job/retry'],
                                 ['Remove job', 'job/remove']]) {
    const b = el('button', label);
    b.type = 'button';
    b.dataset.form = action;
    b.addEventListener('click', () => act(action, {name: queue.value, id: id.value}));
    byId.appendChild(b);
  }
  const state = el('span', null, 'none');
  state.id = 'token-state';
  const status = el('span', null, 'none');
  status.id = 'action-status';
  const confirm = el('div', null, 'confirm');
  confirm.id = 'confirm';
  confirm.hidden = true;
  bar.append(input, use, forget, state, byId, status, confirm);
  bar.hidden = false;
  showTokenState();
}

if (ACTIONS) actionBar();
const main = document.getElementById('sections');
for (const s of SECTIONS) {
  const box = el('section');
  box.id = s.id;
  box.appendChild(el('h2', s.title));
  main.appendChild(box);
}
refresh();
)JS";

constexpr std::string_view style =
    R"CSS(body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
header { display: flex; gap: 1em; align-items: baseline; }
h1 { font-size: 1.4em; margin: 0; }
h2 { font-size: 1.1em; margin: 1.2em 0 0.3em; }
#updated, .count, .none { color: #777; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.5em; text-align: left;
         vertical-align: top; }
th { background: #f4f4f4; }
#confirm { margin-top: 0.5em; padding: 0.4em; background: #fff3cd; border: 1px solid #e0c060; }
td { font-family: ui-monospace, monospace; font-size: 0.92em; overflow-wrap: anywhere; }
ul { margin: 0; padding-left: 1em; }
.kv { margin-right: 0.8em; }
.k { color: #777; }
.error { color: #b00020; }
.ok { color: #1b5e20; }
#actionbar { display: flex; flex-wrap: wrap; gap: 0.5em; align-items: center;
             margin: 0.8em 0; padding: 0.5em; background: #fff8e1; border: 1px solid #f0d080; }
#actionbar[hidden] { display: none; }
button.action { margin: 0 0.3em 0.2em 0; font-size: 0.85em; }
.by-id { display: inline-flex; gap: 0.3em; }
)CSS";

}  // namespace

std::string dashboard_html(std::chrono::milliseconds refresh, std::string_view csrf) {
    return R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>redcoord dashboard</title>
<link rel="stylesheet" href="app.css">
</head>
<body data-refresh=")" +
           std::to_string(refresh.count()) + "\"" +
           (csrf.empty() ? std::string() : " data-csrf=\"" + std::string(csrf) + "\"") + R"(>
<header><h1>redcoord</h1><span id="updated">loading&hellip;</span></header>
<div id="actionbar" hidden></div>
<main id="sections"></main>
<script src="app.js"></script>
</body>
</html>
)";
}

std::string_view dashboard_js() { return script; }
std::string_view dashboard_css() { return style; }

}  // namespace redcoord::detail
