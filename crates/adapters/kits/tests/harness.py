#!/usr/bin/env python3
"""Act as herd towards an external-arm adapter (protocol v1), stdlib only.

Starts a plain HTTP/1.1 keep-alive server on 127.0.0.1:0 (the "upstream", asyncio, in a
process of its own so that it never competes with the harness for a GIL), which
answers by a per-request script and records every request's ``x-herd-request`` id and
arrival time; spawns the adapter with ``--url`` pointing at it; checks the handshake; writes
K request lines at a fixed rate; closes stdin; reads the answers and ``done``; and checks:

- the handshake is the first line, within 10 s, ``herd_adapter`` 1 and ``client`` as asked;
- the upstream received nothing before the handshake;
- every id is answered exactly once, with ``ok``/``status``/``error``/``attempts``/``rejected``
  well typed,
  then ``{"done":true}``, then exit status 0;
- ``attempts`` reported == requests the upstream received with that id;

and prints the gaps between consecutive attempts of each logical request at the upstream
(median, min, max per gap index) and the latency (send → answer read) by decile, so a
drifting adapter shows up.

    harness.py [--requests 20] [--rate 50] [--script 503] [--retry-after S] \\
               [--expect-exit 2 --expect-stderr KEY] [--json] -- ADAPTER CMD [--client X ...]

``--script`` is the upstream's answer per attempt of a logical request, comma separated, the
last repeating: ``503`` (always 503), ``503,503,200``, ``reset,200``; ``reset`` closes the
connection with a TCP RST. ``--url`` is appended to the adapter command by the harness.
With ``--expect-exit``, the adapter must exit with that status *without* a handshake and
its stderr must contain ``--expect-stderr`` (an option refusal test).
"""

import argparse
import asyncio
import json
import multiprocessing
import resource
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time


def _serve(script, retry_after, conn, total):
    """The upstream, in a process of its own (so it never competes with the harness for a
    GIL): an asyncio HTTP/1.1 keep-alive server. Arrival times are CLOCK_MONOTONIC, which
    is system-wide, so they compare with the harness's."""
    arrivals, unlabelled, connections = {}, [0], [0]

    async def handle(reader, writer):
        connections[0] += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                now = time.monotonic()
                lines = head.split(b"\r\n")
                method = lines[0].split(b" ", 1)[0]
                rid, length, close = None, 0, False
                for line in lines[1:]:
                    k, _, v = line.partition(b":")
                    k = k.strip().lower()
                    if k == b"x-herd-request":
                        rid = v.strip().decode()
                    elif k == b"content-length":
                        length = int(v)
                    elif k == b"connection" and v.strip().lower() == b"close":
                        close = True
                if length:
                    await reader.readexactly(length)
                total.value += 1
                if rid is None:
                    unlabelled[0] += 1
                    n = 1
                else:
                    seen = arrivals.setdefault(rid, [])
                    seen.append(now)
                    n = len(seen)
                action = script[min(n, len(script)) - 1]
                if action == "reset":  # SO_LINGER 0, then close: a TCP RST
                    writer.get_extra_info("socket").setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    writer.transport.abort()
                    return
                status = int(action)
                body = b"ok" if status < 400 else b"unavailable"
                extra = f"retry-after: {retry_after}\r\n" if status == 503 and retry_after is not None else ""
                writer.write((f"HTTP/1.1 {status} {'OK' if status < 400 else 'Error'}\r\n"
                              f"content-length: {len(body)}\r\n{extra}\r\n").encode()
                             + (b"" if method == b"HEAD" else body))
                if close:
                    await writer.drain()
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
            writer.transport.abort()

    async def main():
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        server = await asyncio.start_server(handle, sock=sock, backlog=4096)
        conn.send(sock.getsockname()[1])
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_reader(conn.fileno(), stop.set)
        await stop.wait()
        conn.recv()
        ru = resource.getrusage(resource.RUSAGE_SELF)
        conn.send((arrivals, unlabelled[0], connections[0], round(ru.ru_utime + ru.ru_stime, 2)))
        server.close()

    asyncio.run(main())


class Upstream:
    """The upstream process: ``url``, ``total`` (live), ``finish()`` -> (arrivals, unlabelled)."""

    def __init__(self, script, retry_after=None):
        ctx = multiprocessing.get_context("spawn")
        self._total = ctx.Value("q", 0, lock=False)
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(script, retry_after, child, self._total), daemon=True)
        self._proc.start()
        self.url = f"http://127.0.0.1:{self._conn.recv()}/"
        self._result = None

    @property
    def total(self):
        return self._total.value

    def finish(self):
        if self._result is None:
            self._conn.send("stop")
            self._result = self._conn.recv()
        return self._result

    def close(self):
        if self._proc.is_alive():
            try:
                self.finish()
            except (EOFError, OSError):
                pass
            self._proc.join(timeout=5)
            if self._proc.is_alive():
                self._proc.kill()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def run(cmd, requests=20, rate=50.0, script=("503",), retry_after=None, expect_exit=None,
        expect_stderr=None, handshake_timeout=10.0, answer_timeout=120.0):
    """Run one adapter against a fresh upstream; return a summary dict with ``failures``."""
    up = Upstream(list(script), retry_after)
    failures = []
    summary = {"cmd": cmd, "failures": failures}
    full = list(cmd) + ["--url", up.url]
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stderr_chunks = []
    threading.Thread(target=lambda: stderr_chunks.append(proc.stderr.read()), daemon=True).start()
    lines = []  # (monotonic, text)
    eof = threading.Event()

    def read_stdout():
        for raw in proc.stdout:
            lines.append((time.monotonic(), raw.decode(errors="replace").rstrip("\n")))
        eof.set()

    threading.Thread(target=read_stdout, daemon=True).start()

    def stderr_text():
        proc.wait(timeout=5)
        time.sleep(0.05)
        return b"".join(stderr_chunks).decode(errors="replace")

    try:
        if expect_exit is not None:
            try:
                code = proc.wait(timeout=handshake_timeout)
            except subprocess.TimeoutExpired:
                failures.append(f"expected exit {expect_exit}, still running after {handshake_timeout} s")
                proc.kill()
                return summary
            err = stderr_text()
            summary.update(exit=code, stderr=err.strip())
            if code != expect_exit:
                failures.append(f"exit status {code}, expected {expect_exit}")
            if lines:
                failures.append(f"stdout not empty: {lines[0][1][:200]}")
            if expect_stderr and expect_stderr not in err:
                failures.append(f"stderr does not name {expect_stderr!r}: {err.strip()[:300]}")
            return summary

        # Handshake.
        deadline = started + handshake_timeout
        while not lines and not eof.is_set() and time.monotonic() < deadline:
            time.sleep(0.005)
        if not lines:
            failures.append(f"no handshake within {handshake_timeout} s; stderr: {b''.join(stderr_chunks)[-500:]!r}")
            proc.kill()
            return summary
        t0, first = lines[0]
        summary["handshake_s"] = round(t0 - started, 3)
        early = up.total
        if early:
            failures.append(f"upstream received {early} request(s) before the handshake")
        try:
            hs = json.loads(first)
            summary["policy"] = hs.get("policy")
            if hs.get("herd_adapter") != 1:
                failures.append(f"handshake herd_adapter {hs.get('herd_adapter')!r}, expected 1")
            client = full[full.index("--client") + 1] if "--client" in full else None
            if client is not None and hs.get("client") != client:
                failures.append(f"handshake client {hs.get('client')!r}, expected {client!r}")
            if not isinstance(hs.get("policy"), str):
                failures.append("handshake policy is not a string")
        except ValueError:
            failures.append(f"handshake is not JSON: {first[:200]}")
            proc.kill()
            return summary

        # Requests, open loop at a fixed rate.
        sent = {}
        for i in range(requests):
            due = t0 + i / rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            sent[i] = due
            proc.stdin.write(f'{{"id":{i}}}\n'.encode())
            proc.stdin.flush()
        proc.stdin.close()

        deadline = time.monotonic() + answer_timeout + 10
        while not eof.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not eof.is_set():
            failures.append("no EOF on stdout before the answer deadline")
            proc.kill()
        code = proc.wait(timeout=10)
        summary["exit"] = code
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        summary["adapter_cpu_s"] = round(cpu.ru_utime + cpu.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime, 2)
        if code != 0:
            failures.append(f"exit status {code}; stderr: {stderr_text()[-500:]}")

        answers, latencies, done_seen = {}, [], False
        for n, (t, text) in enumerate(lines[1:], start=2):
            try:
                msg = json.loads(text)
            except ValueError:
                failures.append(f"line {n}: not JSON: {text[:200]}")
                continue
            if msg.get("done") is True:
                if done_seen:
                    failures.append(f"line {n}: done twice")
                if len(answers) < requests:
                    failures.append(f"line {n}: done with {requests - len(answers)} unanswered")
                done_seen = True
                continue
            if done_seen:
                failures.append(f"line {n}: after done: {text[:200]}")
            rid = msg.get("id")
            if rid not in sent:
                failures.append(f"line {n}: id never sent: {text[:200]}")
                continue
            if rid in answers:
                failures.append(f"line {n}: id {rid} answered twice")
            if not isinstance(msg.get("ok"), bool):
                failures.append(f"line {n}: ok missing or not a bool")
            for key, kind in (("status", int), ("error", str), ("attempts", int), ("rejected", int)):
                if msg.get(key) is not None and not isinstance(msg.get(key), kind):
                    failures.append(f"line {n}: {key} is not {kind.__name__} or null")
            answers[rid] = msg
            latencies.append((sent[rid], t - sent[rid]))
        if not done_seen:
            failures.append("no done line")
        missing = sorted(set(sent) - set(answers))
        if missing:
            failures.append(f"{len(missing)} id(s) unanswered, e.g. {missing[:5]}")

        # Attempts against the upstream's count.
        summary["upstream_total"] = up.total
        arrivals, unlabelled, summary["upstream_connections"], summary["upstream_cpu_s"] = up.finish()
        summary["upstream_unlabelled"] = unlabelled
        mismatched = []
        for rid, msg in answers.items():
            got = len(arrivals.get(str(rid), []))
            if msg.get("attempts") != got:
                mismatched.append((rid, msg.get("attempts"), got))
        if mismatched:
            failures.append(f"{len(mismatched)} answer(s) whose attempts differ from the upstream's count "
                            f"(id, reported, received), e.g. {mismatched[:5]}")
        if unlabelled:
            failures.append(f"{unlabelled} request(s) without x-herd-request")

        # Outcome mix, gaps, latency.
        mix = {}
        for msg in answers.values():
            key = f"ok={msg['ok']} status={msg.get('status')} error={msg.get('error')} attempts={msg.get('attempts')}"
            if msg.get("rejected") is not None:
                key += f" rejected={msg['rejected']}"
            mix[key] = mix.get(key, 0) + 1
        summary["outcomes"] = mix
        gaps = {}
        for ts in arrivals.values():
            ts.sort()
            for k in range(1, len(ts)):
                gaps.setdefault(k, []).append((ts[k] - ts[k - 1]) * 1000)
        summary["gaps_ms"] = {
            k: {"n": len(v), "median": round(statistics.median(v), 1), "min": round(min(v), 1),
                "max": round(max(v), 1)} for k, v in sorted(gaps.items())}
        latencies.sort()
        lat = [l * 1000 for _, l in latencies]
        if lat:
            tenth = max(1, len(lat) // 10)
            summary["latency_ms"] = {
                "p50": round(pct(lat, 0.5), 1), "p99": round(pct(lat, 0.99), 1), "max": round(max(lat), 1),
                "p50_by_decile": [round(statistics.median(lat[i:i + tenth]), 1)
                                  for i in range(0, len(lat) - tenth + 1, tenth)][:10],
            }
        # First-attempt delay: upstream arrival of attempt 1 minus the line's send time.
        first = [(arrivals[str(r)][0] - sent[r]) * 1000 for r in sent if arrivals.get(str(r))]
        if first:
            summary["first_attempt_delay_ms"] = {"p50": round(pct(first, 0.5), 2), "p99": round(pct(first, 0.99), 2),
                                                 "max": round(max(first), 2)}
        return summary
    finally:
        if proc.poll() is None:
            proc.kill()
        up.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=20)
    p.add_argument("--rate", type=float, default=50.0, help="request lines per second")
    p.add_argument("--script", default="503")
    p.add_argument("--retry-after", type=int, default=None)
    p.add_argument("--expect-exit", type=int, default=None)
    p.add_argument("--expect-stderr", default=None)
    p.add_argument("--answer-timeout", type=float, default=120.0)
    p.add_argument("--json", action="store_true")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        p.error("no adapter command")
    s = run(cmd, a.requests, a.rate, a.script.split(","), a.retry_after, a.expect_exit, a.expect_stderr,
            answer_timeout=a.answer_timeout)
    if a.json:
        print(json.dumps(s, indent=1))
    else:
        for k, v in s.items():
            if k not in ("failures", "cmd"):
                print(f"{k}: {v}")
        print("FAIL:\n  " + "\n  ".join(s["failures"]) if s["failures"] else "PASS")
    sys.exit(1 if s["failures"] else 0)


if __name__ == "__main__":
    main()
