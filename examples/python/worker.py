#!/usr/bin/env python3
"""A job handler for `redcoord jobs work`: one run per job, in any language.

    redcoord jobs work mail --concurrency 4 -- python3 examples/python/worker.py

The job's payload arrives on stdin; REDCOORD_JOB_ID and REDCOORD_JOB_ATTEMPT say which job and
attempt, REDCOORD_DEADLINE_MS (when set) how long it may take before it is stopped. Lines
`progress TEXT` on descriptor 3 record its progress; what it prints on stdout is the job's
result; a non-zero exit fails the attempt (retried per the job's back-off), with the end of
stderr as the error. This one upper-cases its payload; a payload `fail` fails.
"""
import os
import sys


def report_progress(text):
    """Records progress, when run by `redcoord jobs work` (descriptor 3 is then open)."""
    try:
        with open(3, "w", closefd=False) as fd3:
            fd3.write("progress %s\n" % text)
    except OSError:
        pass  # not run by redcoord: no progress channel


def main():
    payload = sys.stdin.buffer.read().decode("utf-8", "replace")
    job = os.environ.get("REDCOORD_JOB_ID", "?")
    attempt = os.environ.get("REDCOORD_JOB_ATTEMPT", "?")
    report_progress("started attempt %s" % attempt)
    if payload == "fail":
        print("job %s: asked to fail" % job, file=sys.stderr)
        return 2
    report_progress("done")
    sys.stdout.write(payload.upper())
    return 0


if __name__ == "__main__":
    sys.exit(main())
