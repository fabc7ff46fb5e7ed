#!/usr/bin/env python3
"""Run harness.py over every adapter found here: protocol and attempt counts, option
refusals, and (with --schedules) the libraries' real retry schedules against a plain 503
upstream with the adapters' default configuration. Stdlib only; adapters whose runtime is
missing (the Python venv, the Go binary, Node) are skipped with a note.

    python3 adapters/tests/check_all.py               # protocol and refusals, about a minute
    python3 adapters/tests/check_all.py --schedules   # + default schedules (~5 min: go jitter waits up to 300 s)
"""

import argparse
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PY = os.path.join(ROOT, "python", ".venv", "bin", "python")
ARM_PY = os.path.join(ROOT, "python", "arm.py")
GO_ARM = os.path.join(ROOT, "go", "herd-go-arm")
MINIMAL = os.path.join(ROOT, "examples", "minimal.py")
FETCH = os.path.join(ROOT, "examples", "fetch-retry.mjs")

# client -> (command, options for a fast run, an unknown key, an ill-typed option,
#            expected default schedule: per gap (low, high) bounds for the median, in ms)
ADAPTERS = {}
if os.path.exists(VENV_PY):
    py = [VENV_PY, ARM_PY, "--client"]
    ADAPTERS.update({
        "py-requests": (py + ["py-requests"], '{"backoff_factor":0.05}', "bogus", '{"total":"3"}',
                        [(0, 20), (980, 1030), (1980, 2030)]),
        "py-tenacity": (py + ["py-tenacity"], '{"multiplier":0.02}', "wait", '{"attempts":2.5}',
                        [(120, 380), (250, 750), (500, 1500)]),
        "py-httpx-retries": (py + ["py-httpx-retries"], '{"backoff_factor":0.02}', "retries",
                             '{"backoff_factor":"x"}', [(250, 750), (500, 1500), (1000, 3000)]),
        "py-httpx-retries-async": (py + ["py-httpx-retries-async"], '{"backoff_factor":0.02}', "retries",
                                   '{"total":true}', None),
    })
else:
    print(f"skip: Python adapters ({VENV_PY} missing; see adapters/python/README.md)")
if os.path.exists(GO_ARM):
    go = [GO_ARM, "--client"]
    ADAPTERS.update({
        "go-retryablehttp": (go + ["go-retryablehttp"], '{"retry_wait_min_ms":20,"retry_wait_max_ms":200}',
                             "retry_wait", '{"retry_max":"4"}',
                             [(990, 1030), (1990, 2030), (3990, 4030), (7990, 8050)]),
        "go-retryablehttp-jitter": (go + ["go-retryablehttp-jitter"],
                                    '{"retry_wait_min_ms":5,"retry_wait_max_ms":20}', "jitter",
                                    '{"retry_wait_min_ms":1.5}',
                                    [(10000, 21000), (20000, 42000), (30000, 63000), (40000, 84000)]),
    })
else:
    print(f"skip: Go adapter ({GO_ARM} missing; run adapters/go/build.sh)")
ADAPTERS["example-minimal"] = ([sys.executable, MINIMAL, "--client"] + ["example-minimal"],
                               '{"retries":2,"delay_ms":20}', "tries", '{"delay_ms":0.5}', None)
if shutil.which("node"):
    ADAPTERS["example-fetch"] = (["node", FETCH, "--client", "example-fetch"], '{"base_ms":20}', "tries",
                                 '{"retries":"2"}', None)


def checks(name, spec, schedules):
    cmd, fast, unknown, illtyped, expected = spec
    out = []
    for script in ("503", "reset,503,200", "200"):
        s = harness.run(cmd + ["--pool", "16", "--timeout-ms", "2000", "--options", fast],
                        requests=30, rate=100, script=script.split(","))
        out.append((f"{name} script {script}", s["failures"], s.get("outcomes")))
    s = harness.run(cmd + ["--options", f'{{"{unknown}":1}}'], expect_exit=2, expect_stderr=unknown)
    out.append((f"{name} refuses unknown option {unknown}", s["failures"], s.get("stderr")))
    key = illtyped.split('"')[1]
    s = harness.run(cmd + ["--options", illtyped], expect_exit=2, expect_stderr=key)
    out.append((f"{name} refuses {illtyped}", s["failures"], s.get("stderr")))
    if schedules and expected:
        n = 200 if name.endswith(("tenacity", "retries", "jitter")) else 30
        s = harness.run(cmd + ["--pool", "64"], requests=n, rate=50, answer_timeout=400)
        gaps = s.get("gaps_ms", {})
        failures = list(s["failures"])
        for k, (lo, hi) in enumerate(expected, start=1):
            med = gaps.get(k, {}).get("median")
            if med is None or not lo <= med <= hi:
                failures.append(f"gap {k} median {med} ms outside [{lo}, {hi}]")
        medians = ", ".join(f"{g['median']:g}" for g in gaps.values())
        out.append((f"{name} default schedule, {n} requests: gap medians {medians} ms", failures, None))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--schedules", action="store_true")
    p.add_argument("only", nargs="*", help="client ids (default: all found)")
    a = p.parse_args()
    names = a.only or list(ADAPTERS)
    bad = 0
    with ThreadPoolExecutor(max_workers=3) as pool:
        for results in pool.map(lambda n: checks(n, ADAPTERS[n], a.schedules), names):
            for title, failures, detail in results:
                print(f"{'FAIL' if failures else 'ok  '} {title}" + (f"  {detail}" if detail and not failures else ""))
                for f in failures:
                    print(f"       {f}")
                bad += bool(failures)
    print(f"{bad} failed" if bad else "all passed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
