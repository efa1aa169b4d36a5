#include "page.hpp"

namespace redcoord::detail {

namespace {

// The script builds every element with createElement and fills it with textContent only:
// no value from Redis ever reaches innerHTML, so a payload is shown as the text it is.
constexpr std::string_view script = R"JS('use strict';
const REFRESH = Number(document.body.dataset.refresh) || 2000;
const MAX_PAGES = 10;

const SECTIONS = [
  {id: 'locks', title: 'Locks', cols: [
    ['name', 'Name'], ['held', 'Held'], ['holder', 'Holder (fingerprint)'],
    ['ttl_left_ms', 'TTL left'], ['fencing_counter', 'Fencing counter'],
    ['release_notice', 'Waiter notified'], ['fair_queue_length', 'Fair queue'],
    ['turn_owner', 'Turn']]},
  {id: 'elections', title: 'Elections', cols: [
    ['name', 'Name'], ['leader', 'Leader'], ['epoch', 'Epoch'], ['term_left_ms', 'Term left'],
    ['rounds', 'Rounds this term'], ['last_epoch', 'Last epoch']]},
  {id: 'queues', title: 'Queues', cols: [
    ['name', 'Name'], ['ready', 'Ready'], ['in_flight', 'In flight'], ['dead', 'Dead'],
    ['oldest_ready_age_ms', 'Oldest ready'], ['consumers', 'Consumers']]},
  {id: 'jobs', title: 'Jobs', cols: [
    ['name', 'Queue'], ['counts', 'Counts'], ['oldest_waiting_age_ms', 'Oldest waiting'],
    ['scheduler', 'Scheduler'], ['repeats', 'Repeats'], ['failed_jobs', 'Failed jobs'],
    ['dead_jobs', 'Dead jobs']]},
  {id: 'barriers', title: 'Barriers', cols: [
    ['name', 'Name'], ['generation', 'Generation'], ['parties', 'Parties'],
    ['arrivals', 'Arrived'], ['lapsed', 'Lapsed']]},
  {id: 'limits', title: 'Semaphores and rate limiters', cols: [
    ['kind', 'Kind'], ['name', 'Name']]},
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

function table(section, items) {
  const t = el('table');
  const head = el('tr');
  for (const [, title] of section.cols) head.appendChild(el('th', title));
  head.appendChild(el('th', 'Error'));
  t.appendChild(el('thead')).appendChild(head);
  const body = t.appendChild(el('tbody'));
  for (const item of items) {
    const tr = el('tr');
    tr.dataset.name = item.name;
    for (const [key] of section.cols) {
      const td = el('td');
      td.dataset.col = key;
      td.appendChild(render(key, item[key]));
      tr.appendChild(td);
    }
    tr.appendChild(el('td', item.error || item.jobs_error || '', 'error'));
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

async function refresh() {
  await Promise.all(SECTIONS.map(refreshSection));
  document.getElementById('updated').textContent =
      'updated ' + new Date().toLocaleTimeString();
  document.body.dataset.loaded = 'true';
  setTimeout(refresh, REFRESH);
}

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
td { font-family: ui-monospace, monospace; font-size: 0.92em; overflow-wrap: anywhere; }
ul { margin: 0; padding-left: 1em; }
.kv { margin-right: 0.8em; }
.k { color: #777; }
.error { color: #b00020; }
)CSS";

}  // namespace

std::string dashboard_html(std::chrono::milliseconds refresh) {
    return R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>redcoord dashboard</title>
<link rel="stylesheet" href="app.css">
</head>
<body data-refresh=")" +
           std::to_string(refresh.count()) + R"(">
<header><h1>redcoord</h1><span id="updated">loading&hellip;</span></header>
<main id="sections"></main>
<script src="app.js"></script>
</body>
</html>
)";
}

std::string_view dashboard_js() { return script; }
std::string_view dashboard_css() { return style; }

}  // namespace redcoord::detail
