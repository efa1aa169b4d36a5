#!/usr/bin/env python3
"""Adds jobs to a redcoord job queue from Python, with no redcoord code but its scripts.

The add script is published (docs/jobs-wire.md, format 1): jobs/src/lua/jobs_prelude.lua
followed by jobs/src/lua/jobs_add.lua, run with EVALSHA (redis-py's Script falls back to EVAL
when the server does not know it yet). Any `redcoord jobs work` or C++ job_worker on the same
queue then runs the jobs.

    producer.py --redis redis://127.0.0.1:6379 --queue mail "to alice" "to bob"

prints one line per job: its id, and `(already known, STATE)` when the id was known.
"""
import argparse
import os
import secrets
import sys

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
LUA_DIR = os.path.join(HERE, "..", "..", "jobs", "src", "lua")
WIRE_FORMAT = 1


def add_script_source(lua_dir=LUA_DIR):
    """The add script of wire format 1: the shared prelude, then jobs_add."""
    parts = []
    for name in ("jobs_prelude.lua", "jobs_add.lua"):
        with open(os.path.join(lua_dir, name), encoding="utf-8") as f:
            parts.append(f.read())
    return "".join(parts)


class JobQueue:
    """The producer's side of the redcoord job queue `name` (docs/jobs-wire.md)."""

    def __init__(self, client, name, prefix="redcoord:", lua_dir=LUA_DIR):
        if not name or "\r" in name or "\n" in name or name.startswith("}"):
            raise ValueError("bad queue name: %r" % name)
        self.base = "%sjobs:{%s}" % (prefix, name)
        self.wake = self.base + ":wake"
        self._add = client.register_script(add_script_source(lua_dir))

    def add(self, payload, job_id=None, priority=0, max_attempts=3, timeout_ms=0, delay_ms=0,
            run_at_ms=0, deadline_ms=0, backoff_ms=1000, backoff_max_ms=3600000,
            fixed_backoff=False, jitter=0.0):
        """Adds one job; returns (id, added, state). A known id adds nothing (added False)."""
        if not 0 <= priority <= 9:
            raise ValueError("priority must be in 0..9")
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if not 0 <= jitter <= 1:
            raise ValueError("jitter must be in 0..1")
        job_id = job_id or secrets.token_hex(20)
        kind = "f" if fixed_backoff else "e"
        cap = backoff_ms if fixed_backoff else backoff_max_ms
        options = "%d %d %s %d %d %.6f" % (priority, max_attempts, kind, backoff_ms, cap, jitter)
        reply = self._add(keys=[self.base],
                          args=[self.wake, job_id, payload, options, int(timeout_ms),
                                int(delay_ms), int(run_at_ms), int(deadline_ms)])
        state = reply[1].decode() if isinstance(reply[1], bytes) else reply[1]
        return job_id, reply[0] == 1, state


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--redis", default=os.environ.get("REDCOORD_REDIS", "redis://127.0.0.1:6379"))
    p.add_argument("--queue", required=True)
    p.add_argument("--prefix", default="redcoord:")
    p.add_argument("--id", help="the job's id (one payload only)")
    p.add_argument("--priority", type=int, default=0)
    p.add_argument("--max-attempts", type=int, default=3)
    p.add_argument("--timeout-ms", type=int, default=0)
    p.add_argument("--backoff-ms", type=int, default=1000)
    p.add_argument("--fixed", action="store_true", help="the same retry delay every time")
    p.add_argument("payloads", nargs="+")
    a = p.parse_args()
    if a.id and len(a.payloads) != 1:
        p.error("--id names one job: give exactly one payload")
    queue = JobQueue(redis.Redis.from_url(a.redis), a.queue, a.prefix)
    for payload in a.payloads:
        job_id, added, state = queue.add(payload, job_id=a.id, priority=a.priority,
                                         max_attempts=a.max_attempts, timeout_ms=a.timeout_ms,
                                         backoff_ms=a.backoff_ms, fixed_backoff=a.fixed)
        print(job_id if added else "%s (already known, %s)" % (job_id, state), flush=True)


if __name__ == "__main__":
    sys.exit(main())
