#!/usr/bin/env python3
"""A minimal herd adapter (external-arm protocol v1), standard library only.

Copy it and put your own client in `attempt`. The protocol (docs/external-arm-protocol.md):
print a handshake line, then for each {"id":N} line on stdin start that request at once and
print one answer line when it is done (retries included); at stdin EOF, finish the rest,
print {"done":true} and exit 0. stdout carries the protocol only.

    python3 minimal.py --client example-minimal --url http://127.0.0.1:PORT/ \
        [--method GET] [--pool 256] [--timeout-ms 2000] [--options '{"retries":2,"delay_ms":100}']

The client: urllib.request (a new connection per attempt; --pool is not used), retrying a
503 `retries` times after a fixed `delay_ms`.
"""

import argparse
import json
import sys
import threading
import time
import urllib.error
import urllib.request

OPTIONS = {"retries": int, "delay_ms": int}  # the options this adapter accepts, and their types

p = argparse.ArgumentParser()
p.add_argument("--client", required=True)
p.add_argument("--url", required=True)
p.add_argument("--method", default="GET")
p.add_argument("--pool", type=int, default=256)
p.add_argument("--timeout-ms", type=int, default=0)
p.add_argument("--options", default="{}")
args = p.parse_args()  # a usage error exits with status 2

if args.client != "example-minimal":
    sys.exit(f"unknown client {args.client} (expected example-minimal)")  # exit status 1
options = json.loads(args.options)
for key, value in options.items():
    if key not in OPTIONS or type(value) is not OPTIONS[key]:
        print(f"option {key!r}: unknown, or not {OPTIONS.get(key, int).__name__}", file=sys.stderr)
        sys.exit(2)  # before the handshake
retries = options.get("retries", 2)
delay = options.get("delay_ms", 100) / 1000
timeout = args.timeout_ms / 1000 or None

out_lock = threading.Lock()


def send(message):
    with out_lock:  # one whole line at a time, from any thread
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def attempt(request_id):
    """One attempt: the final HTTP status (raises on a connection error or timeout)."""
    req = urllib.request.Request(args.url, method=args.method.upper(),
                                 headers={"x-herd-request": str(request_id)})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as e:  # urllib raises on 4xx/5xx: that is a response too
        e.read()
        return e.code


def run(request_id):
    attempts, status, error = 0, None, None
    try:
        while True:
            attempts += 1
            status = attempt(request_id)
            if status != 503 or attempts > retries:
                break
            time.sleep(delay)
    except Exception as e:  # the request ended without a response
        status, error = None, type(e).__name__
    ok = status is not None and 200 <= status < 300
    send({"id": request_id, "ok": ok, "status": status, "error": error, "attempts": attempts})


send({"herd_adapter": 1, "client": args.client,
      "policy": f"urllib.request (Python {sys.version.split()[0]}), new connection per attempt; "
                f"503 retried {retries} times after {delay * 1000:g} ms; "
                f"timeout {args.timeout_ms or 'none'} ms per attempt"})

threads = []
for line in sys.stdin:
    if line.strip():
        t = threading.Thread(target=run, args=(json.loads(line)["id"],))
        t.start()
        threads.append(t)
for t in threads:
    t.join()
send({"done": True})
