#!/usr/bin/env python3
"""Run harness.py over every adapter found here: protocol and attempt counts, option
refusals, and (with --schedules) the libraries' real retry schedules against a plain 503
upstream with the adapters' default configuration. Stdlib only; adapters whose runtime is
missing (the Python venv, the Go binary, Node) are skipped with a note.

    python3 crates/adapters/kits/tests/check_all.py               # protocol and refusals, about a minute
    python3 crates/adapters/kits/tests/check_all.py --schedules   # + default schedules (~5 min: go jitter waits up to 300 s)
    python3 crates/adapters/kits/tests/check_all.py node-undici   # only these clients (no option cases)

Without arguments it also checks that the Node clients' own options (--options) change
their attempts and schedules as documented (OPTION_CASES).
"""

import argparse
import atexit
import multiprocessing
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# HERD_TEST_PYTHON: another interpreter with requirements.txt installed.
VENV_PY = os.environ.get("HERD_TEST_PYTHON") or os.path.join(ROOT, "python", ".venv", "bin", "python")
ARM_PY = os.path.join(ROOT, "python", "arm.py")
GO_ARM = os.path.join(ROOT, "go", "herd-go-arm")
MINIMAL = os.path.join(ROOT, "examples", "minimal.py")
FETCH = os.path.join(ROOT, "examples", "fetch-retry.mjs")
ARM_MJS = os.path.join(ROOT, "node", "arm.mjs")
NODE_MODULES = os.path.join(ROOT, "node", "node_modules")


def user_layout(example, kit, node_modules=None):
    """docs/your-client.md's layout: a project with arms/<example> next to a copy of the kit
    (and its node_modules, for Node); returns the example's path there. (harness.py's
    upstream is a spawned process, which imports this module again: it needs no copy.)"""
    if multiprocessing.parent_process() is not None:
        return example
    project = tempfile.mkdtemp(prefix="herd-user-")
    atexit.register(shutil.rmtree, project, True)
    arms = os.path.join(project, "arms")
    os.mkdir(arms)
    shutil.copy(os.path.join(ROOT, "examples", example), arms)
    shutil.copy(kit, arms)
    if node_modules:
        os.symlink(node_modules, os.path.join(project, "node_modules"))
    return os.path.join(arms, example)


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
        "py-pybreaker": (py + ["py-pybreaker"], '{"reset_timeout":0.05}', "failmax", '{"fail_max":"5"}', None),
    })
    ADAPTERS["my-requests"] = ([VENV_PY, user_layout("my-requests.py", os.path.join(ROOT, "python", "herd_arm.py")),
                                "--client", "my-requests"], '{"backoff_factor":0.01}', "totl", '{"total":"4"}',
                               [(0, 20), (490, 530), (990, 1030), (1990, 2030)])
else:
    print(f"skip: Python adapters ({VENV_PY} missing; see crates/adapters/kits/python/README.md)")
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
        "go-resiliency": (go + ["go-resiliency"], '{"timeout_ms":50}', "errs", '{"errors":1.5}', None),
    })
else:
    print(f"skip: Go adapter ({GO_ARM} missing; run crates/adapters/kits/go/build.sh)")
ADAPTERS["example-minimal"] = ([sys.executable, MINIMAL, "--client"] + ["example-minimal"],
                               '{"retries":2,"delay_ms":20}', "tries", '{"delay_ms":0.5}', None)
if shutil.which("node"):
    ADAPTERS["example-fetch"] = (["node", FETCH, "--client", "example-fetch"], '{"base_ms":20}', "tries",
                                 '{"retries":"2"}', None)
if shutil.which("node") and os.path.isdir(NODE_MODULES):
    def arm(c):
        return ["node", ARM_MJS, "--client", c]
    # Default schedules: undici min(500·2^(n−1), 30000) ms; axios-retry exponentialDelay
    # 100·2^n + U[0, 20%]; -nojitter 2^n·100; the full-jitter ones' medians are half the cap.
    ADAPTERS.update({
        "node-undici": (arm("node-undici"), '{"minTimeout":20}', "maxRetrys", '{"maxRetries":"2"}',
                        [(495, 530), (995, 1030), (1995, 2040), (3995, 4050), (7995, 8060)]),
        "node-undici-fulljitter": (arm("node-undici-fulljitter"), '{"minTimeout":20}', "jitter",
                                   '{"statusCodes":[503,"x"]}',
                                   [(120, 380), (250, 750), (500, 1500), (1000, 3000), (2000, 6000)]),
        "node-axios-retry": (arm("node-axios-retry"), '{"delayFactor":5}', "retry", '{"retryDelay":"expo"}',
                             [(200, 250), (400, 490), (800, 980)]),
        "node-axios-retry-nojitter": (arm("node-axios-retry-nojitter"), '{"delayFactor":5}', "retrys",
                                      '{"shouldResetTimeout":1}', [(198, 225), (398, 430), (798, 840)]),
        "node-axios-retry-fulljitter": (arm("node-axios-retry-fulljitter"), '{"delayFactor":5}', "jitter",
                                        '{"retries":-1}', [(60, 140), (120, 280), (240, 560)]),
        "node-opossum": (arm("node-opossum"), '{"resetTimeout":50}', "reset", '{"resetTimeout":"50"}', None),
        "node-cockatiel": (arm("node-cockatiel"), '{"halfOpenAfter":50,"initialDelay":5}', "attempts",
                           '{"maxAttempts":1.5}', None),
        "my-axios": (["node", user_layout("my-axios.mjs", os.path.join(ROOT, "node", "kit.mjs"), NODE_MODULES),
                      "--client", "my-axios"], '{"base_ms":5}', "retrys", '{"base_ms":"5"}',
                     [(600, 730), (1200, 1450), (2400, 2900)]),
    })
    # The libraries' own options change what they do: (title, command, harness arguments,
    # attempts every request must make, per gap (low, high) bounds for the median, in ms).
    OPTION_CASES = [
        ("node-undici maxRetries 2, minTimeout 100, timeoutFactor 2",
         arm("node-undici") + ["--options", '{"maxRetries":2,"minTimeout":100,"timeoutFactor":2}'], {},
         3, [(98, 120), (198, 225)]),
        ("node-undici-fulljitter maxRetries 1, minTimeout 200",
         arm("node-undici-fulljitter") + ["--options", '{"maxRetries":1,"minTimeout":200}'], {},
         2, [(40, 160)]),
        ("node-undici statusCodes [502]: a 503 is not retried",
         arm("node-undici") + ["--options", '{"statusCodes":[502]}'], {}, 1, []),
        ("node-undici retryAfter false, Retry-After: 1 (undici 7.30.2 ignores retryAfter)",
         arm("node-undici") + ["--options", '{"maxRetries":2,"retryAfter":false}'], {"retry_after": 1},
         3, [(995, 1040), (995, 1040)]),
        ("node-axios-retry retries 1, retryDelay none",
         arm("node-axios-retry") + ["--options", '{"retries":1,"retryDelay":"none"}'], {}, 2, [(0, 30)]),
        ("node-axios-retry retryDelay linear, delayFactor 50",
         arm("node-axios-retry") + ["--options", '{"retryDelay":"linear","delayFactor":50}'], {},
         4, [(48, 70), (98, 125), (148, 180)]),
        ("node-axios-retry retryCondition network: a 503 is not retried",
         arm("node-axios-retry") + ["--options", '{"retryCondition":"network"}'], {}, 1, []),
        ("node-axios-retry-nojitter retries 2, delayFactor 50",
         arm("node-axios-retry-nojitter") + ["--options", '{"retries":2,"delayFactor":50}'], {},
         3, [(98, 125), (198, 230)]),
    ]
    REFUSALS = [
        (arm("node-axios-retry") + ["--options", '{"retryDelay":"none","delayFactor":50}'], "delayFactor"),
        (arm("node-undici") + ["--options", '[1]'], "JSON object"),
    ]
else:
    print(f"skip: Node adapters (node or {NODE_MODULES} missing; run npm ci in crates/adapters/kits/node)")
    OPTION_CASES, REFUSALS = [], []


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


def option_checks():
    out = []
    for title, cmd, kw, attempts, gaps in OPTION_CASES:
        s = harness.run(cmd, requests=20, rate=20, **kw)
        failures = list(s["failures"])
        got = {m.split("attempts=")[1] for m in s.get("outcomes", {})}
        if got != {str(attempts)}:
            failures.append(f"attempts {sorted(got)}, expected {attempts}")
        medians = s.get("gaps_ms", {})
        if len(medians) != len(gaps):
            failures.append(f"{len(medians)} gaps, expected {len(gaps)}")
        for k, (lo, hi) in enumerate(gaps, start=1):
            med = medians.get(k, {}).get("median")
            if med is None or not lo <= med <= hi:
                failures.append(f"gap {k} median {med} ms outside [{lo}, {hi}]")
        shown = ", ".join(f"{g['median']:g}" for g in medians.values()) or "none"
        out.append((f"{title}: {attempts} attempts, gap medians {shown} ms", failures, None))
    for cmd, needle in REFUSALS:
        s = harness.run(cmd, expect_exit=2, expect_stderr=needle)
        out.append((f"{cmd[3]} refuses {cmd[-1]}", s["failures"], s.get("stderr")))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--schedules", action="store_true")
    p.add_argument("only", nargs="*", help="client ids (default: all found)")
    a = p.parse_args()
    names = a.only or list(ADAPTERS)
    bad = 0
    jobs = [lambda n=n: checks(n, ADAPTERS[n], a.schedules) for n in names]
    if not a.only:
        jobs.append(option_checks)
    with ThreadPoolExecutor(max_workers=3) as pool:
        for results in pool.map(lambda job: job(), jobs):
            for title, failures, detail in results:
                print(f"{'FAIL' if failures else 'ok  '} {title}" + (f"  {detail}" if detail and not failures else ""))
                for f in failures:
                    print(f"       {f}")
                bad += bool(failures)
    print(f"{bad} failed" if bad else "all passed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
