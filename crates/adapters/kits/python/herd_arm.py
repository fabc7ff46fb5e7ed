"""herd_arm: a kit for herd external-arm adapters (protocol v1) in Python, stdlib only.

herd drives a real client library through an *adapter* program (docs/external-arm-protocol.md):
the adapter prints a handshake line, reads ``{"id":N}`` lines on stdin, starts each logical
request at once through the library, answers one line per request on stdout when the library
is done with it (retries included), and prints ``{"done":true}`` once stdin is closed and
every request is answered. This module does all of that; an adapter supplies one function
that builds the client. A whole adapter::

    import herd_arm, requests

    def build(cfg, warmup):
        # cfg.url, cfg.method, cfg.pool, cfg.timeout_ms, cfg.options (validated), cfg.client
        # warmup: True for the throwaway warm-up client (use the smallest delay that still retries there)
        session = requests.Session()

        def call(req):                      # one logical request, run on a worker thread
            # req.method, req.url: the trace line's method and path if herd sent them,
            # else --method and --url
            r = session.request(req.method, req.url, headers=req.headers)
            return herd_arm.Result(status=r.status_code, attempts=1)

        return herd_arm.Client(policy="requests, no retries", call=call, close=session.close)

    herd_arm.main({"py-plain": build}, options={"py-plain": {}})

``main(clients, options=None, *, warmup=True, threads=None)``
    Parses the command line (``--client --url [--method GET] [--pool 256] [--timeout-ms 0]
    [--options '<JSON object>']``), validates ``--options`` against the declaration for the
    client, builds and warms up the client, prints the handshake, runs the protocol loop and
    exits 0 after ``done``. Usage errors, an unknown client, and an unknown or ill-typed
    option end the process with a sentence on stderr and exit status 2, *before* the
    handshake. ``warmup=False`` skips the warm-up; ``threads`` bounds the worker threads of a
    sync ``call`` (default ``max(pool, 1024)``: a sync retrying library holds its thread
    during its backoff sleeps, so the threads must cover every outstanding logical request,
    not just the connections; a request that has to wait for a thread is reported on stderr).

``options``: ``{client_id: {key: type}}``. A type is ``int``, ``float`` (accepts integers),
    ``bool``, ``str``, ``[T]`` (a JSON array of T), or a tuple of alternatives, where
    ``None`` admits JSON ``null`` (e.g. ``(float, None)``). Booleans are never integers.
    Keys absent from ``--options`` are absent from ``cfg.options``: apply your defaults with
    ``cfg.options.get(key, default)``.

``build(cfg, warmup) -> Client``
    Called twice: first with ``warmup=True`` and ``cfg.url`` pointing at the kit's own
    loopback server (answers 200, 503 and TCP resets in turn), then with ``warmup=False``
    and herd's URL. Build the library exactly as for the run, but with the smallest delay
    that still retries when ``warmup`` is true (a library such as got reads a delay of 0 as
    "do not retry"), so the warm-up exercises the retry paths without waiting.

``Client(policy, call, close=None)``
    ``policy``: the handshake's policy text (library versions, configuration as set up, pool,
    how the timeout applies). ``call(req)``: one logical request, either a plain function
    (run on a thread pool) or an ``async def`` (run as a task on one asyncio loop in the main
    thread). ``close()``: optional, called at the end (may be ``async``).

``req`` (a ``Call``)
    ``req.id`` (int); ``req.headers``: ``{"x-herd-request": "<id>"}``, to send on the request
    so that every attempt carries it; ``req.header_value``: the same value as a string;
    ``req.attempts``: the attempt counter, incremented by ``req.count_attempt()``.

``count_attempt(request_id=None)``
    Counts one attempt, for a transport hook that sees each attempt: with an id (int, or the
    ``x-herd-request`` header's string value) it counts for that outstanding request;
    without, for the request running in the current context (thread or asyncio task).

``call`` returns
    a ``Result(status=None, attempts=None, ok=None, error=None, rejected=None)``, or an int
    (the final status), or an object with ``status_code`` or ``status``. ``ok`` defaults to
    ``200 <= status < 300``; ``attempts`` defaults to the counter if anything was counted,
    else null (a call the library turned away without sending anything, such as an open
    circuit breaker's, returns ``attempts=0`` explicitly). ``rejected``: calls the library's
    own breaker turned away for this request, never sent (the answer's ``rejected`` field).
    An exception raised by ``call`` becomes ``ok: false, error: "<ClassName>"``
    with the counted attempts (or the exception's own ``attempts`` attribute if it has one).

stdout carries the protocol only: the kit writes answers under a lock, one line each, flushed;
anything for humans goes to stderr (``herd_arm.log(...)``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import http.server
import inspect
import json
import os
import queue
import socket
import struct
import sys
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

PROTOCOL = 1
REQUEST_ID_HEADER = "x-herd-request"
WARMUP_BATCHES = 5
WARMUP_BATCH = 40

__all__ = ["main", "Client", "Result", "Call", "Config", "count_attempt", "log", "fail"]


def log(message: str) -> None:
    sys.stderr.write(f"herd python adapter: {message}\n")
    sys.stderr.flush()


def fail(message: str, status: int = 2):
    """Say why on stderr and exit with ``status`` (2: usage), at once, from any thread."""
    log(message)
    sys.stdout.flush()
    os._exit(status)


@dataclass
class Config:
    client: str
    url: str
    method: str = "GET"
    pool: int = 256
    timeout_ms: int = 0
    options: dict = field(default_factory=dict)

    @property
    def timeout_s(self) -> Optional[float]:
        """``--timeout-ms`` in seconds, or None for no timeout (``0``)."""
        return self.timeout_ms / 1000.0 if self.timeout_ms else None


@dataclass
class Result:
    status: Optional[int] = None
    attempts: Optional[int] = None
    ok: Optional[bool] = None
    error: Optional[str] = None
    rejected: Optional[int] = None


@dataclass
class Client:
    policy: str
    call: Callable[["Call"], Any]
    close: Optional[Callable[[], Any]] = None


class Call:
    """One logical request, as the user's ``call`` sees it."""

    __slots__ = ("id", "header_value", "headers", "attempts", "method", "url", "_lock")

    def __init__(self, request_id: int, method: str = "GET", url: str = ""):
        self.id = request_id
        self.method = method
        self.url = url
        self.header_value = str(request_id)
        self.headers = {REQUEST_ID_HEADER: self.header_value}
        self.attempts = 0
        self._lock = threading.Lock()

    def count_attempt(self) -> None:
        with self._lock:
            self.attempts += 1


_current: contextvars.ContextVar[Optional[Call]] = contextvars.ContextVar("herd_call", default=None)
_outstanding: dict[str, Call] = {}
_outstanding_lock = threading.Lock()


def count_attempt(request_id=None) -> None:
    """Count one attempt for request ``request_id`` (int or header string), or the current one."""
    if request_id is None:
        c = _current.get()
    else:
        with _outstanding_lock:
            c = _outstanding.get(str(request_id).strip())
    if c is not None:
        c.count_attempt()


# ---------------------------------------------------------------------------------------
# Command line and options.


def _type_name(t) -> str:
    if t is None:
        return "null"
    if isinstance(t, list):
        return f"array of {_type_name(t[0])}"
    if isinstance(t, tuple):
        return " or ".join(_type_name(x) for x in t)
    return {int: "integer", float: "number", bool: "boolean", str: "string"}.get(t, getattr(t, "__name__", str(t)))


def _conforms(value, t) -> bool:
    if isinstance(t, tuple):
        return any(_conforms(value, x) for x in t)
    if t is None:
        return value is None
    if isinstance(t, list):
        return isinstance(value, list) and all(_conforms(v, t[0]) for v in value)
    if t is bool:
        return isinstance(value, bool)
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if t is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, t)


def validate_options(client: str, raw: str, declared: dict) -> dict:
    """Parse ``--options`` and check it against ``declared``; exit 2 naming the key if not."""
    try:
        options = json.loads(raw)
    except json.JSONDecodeError as e:
        fail(f"--options is not valid JSON ({e}): {raw[:200]}")
    if not isinstance(options, dict):
        fail(f"--options must be a JSON object, got {raw[:200]}")
    accepted = ", ".join(f"{k} ({_type_name(t)})" for k, t in declared.items()) or "none"
    for key, value in options.items():
        if key not in declared:
            fail(f"client {client} does not accept option {key!r} (it accepts: {accepted})")
        if not _conforms(value, declared[key]):
            fail(f"client {client}: option {key!r} must be {_type_name(declared[key])}, got {json.dumps(value)}")
    return options


def parse_args(argv, clients: dict, declared: dict) -> Config:
    class Parser(argparse.ArgumentParser):
        def error(self, message):
            fail(message)

    p = Parser(prog="adapter", add_help=False)
    p.add_argument("--client", required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--method", default="GET")
    p.add_argument("--pool", type=int, default=256)
    p.add_argument("--timeout-ms", type=int, default=0)
    p.add_argument("--options", default="{}")
    a = p.parse_args(argv)
    if a.client not in clients:
        fail(f"unknown client {a.client} (expected one of: {', '.join(clients)})")
    if a.pool < 1:
        fail("--pool must be a positive integer")
    if a.timeout_ms < 0:
        fail("--timeout-ms must be a non-negative integer (0: no timeout)")
    if not a.url.startswith(("http://", "https://")):
        fail(f"--url {a.url} is not an http(s) URL")
    options = validate_options(a.client, a.options, declared.get(a.client, {}))
    return Config(client=a.client, url=a.url, method=a.method.upper(), pool=a.pool,
                  timeout_ms=a.timeout_ms, options=options)


# ---------------------------------------------------------------------------------------
# Running calls.


def _answer(c: Call, outcome: Any, exc: Optional[BaseException]) -> dict:
    counted = c.attempts or None
    if exc is not None:
        attempts = getattr(exc, "attempts", None)
        if not isinstance(attempts, int) or isinstance(attempts, bool):
            attempts = counted
        return {"id": c.id, "ok": False, "status": None, "error": type(exc).__name__, "attempts": attempts}
    if isinstance(outcome, Result):
        r = outcome
    elif isinstance(outcome, int) and not isinstance(outcome, bool):
        r = Result(status=outcome)
    else:
        status = getattr(outcome, "status_code", None)
        if status is None:
            status = getattr(outcome, "status", None)
        r = Result(status=status if isinstance(status, int) else None)
    ok = r.ok if r.ok is not None else (r.status is not None and 200 <= r.status < 300)
    error = r.error
    if not ok and r.status is None and error is None:
        error = "Error"
    attempts = r.attempts if r.attempts is not None else counted
    answer = {"id": c.id, "ok": bool(ok), "status": r.status, "error": error, "attempts": attempts}
    if r.rejected:
        answer["rejected"] = r.rejected
    return answer


class _Output:
    def __init__(self, stream):
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, obj: dict) -> None:
        line = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        with self._lock:
            try:
                self._stream.write(line)
                self._stream.flush()
            except BrokenPipeError:
                # herd went away; nothing is left to do.
                os._exit(3)


# (--method, --url) of the client being driven: a request line without method and path.
_target = ("GET", "")


def _register(request_id: int, method: Optional[str] = None, path: Optional[str] = None) -> Call:
    default_method, url = _target
    if path is not None:
        u = urllib.parse.urlsplit(url)
        url = f"{u.scheme}://{u.netloc}{path}"
    c = Call(request_id, method or default_method, url)
    with _outstanding_lock:
        _outstanding[c.header_value] = c
    return c


def _unregister(c: Call) -> None:
    with _outstanding_lock:
        _outstanding.pop(c.header_value, None)


class _SyncRunner:
    """A plain ``call`` on a thread pool."""

    def __init__(self, call, threads: int):
        self.call = call
        self.threads = threads
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="herd-call")
        self.cv = threading.Condition()
        self.outstanding = 0
        self.warned = False

    def _run(self, c: Call, emit):
        token = _current.set(c)
        try:
            out, exc = self.call(c), None
        except Exception as e:  # noqa: BLE001 - every failure is an answer
            out, exc = None, e
        finally:
            _current.reset(token)
            _unregister(c)
        try:
            emit(_answer(c, out, exc))
        finally:
            with self.cv:
                self.outstanding -= 1
                self.cv.notify_all()

    def submit(self, request, emit) -> None:
        c = _register(*request) if isinstance(request, tuple) else _register(request)
        with self.cv:
            self.outstanding += 1
            if self.outstanding > self.threads and not self.warned:
                self.warned = True
                log(f"more than {self.threads} requests outstanding: requests wait for a thread "
                    f"(raise main(threads=...))")
        self.pool.submit(self._run, c, emit)

    def drain(self) -> None:
        with self.cv:
            while self.outstanding:
                self.cv.wait()
        self.pool.shutdown(wait=True)


async def _run_async(call, c: Call, emit):
    _current.set(c)  # this task's own context
    try:
        out, exc = await call(c), None
    except Exception as e:  # noqa: BLE001
        out, exc = None, e
    finally:
        _unregister(c)
    emit(_answer(c, out, exc))


async def _drive_async(call, ids, emit) -> None:
    """Run ``call`` for each id from ``ids`` (an iterable, or a queue fed by a reader thread)."""
    tasks = set()
    if isinstance(ids, queue.SimpleQueue):
        loop = asyncio.get_running_loop()
        aq: asyncio.Queue = asyncio.Queue()

        def pump():
            while True:
                item = ids.get()
                loop.call_soon_threadsafe(aq.put_nowait, item)
                if item is None:
                    return

        threading.Thread(target=pump, daemon=True, name="herd-pump").start()
        while True:
            item = await aq.get()
            if item is None:
                break
            t = asyncio.create_task(_run_async(call, _register(*item), emit))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
    else:
        for i in ids:
            t = asyncio.create_task(_run_async(call, _register(i), emit))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
    while tasks:
        await asyncio.gather(*list(tasks))


def _close(client: Client) -> None:
    if client.close is None:
        return
    try:
        r = client.close()
        if inspect.isawaitable(r):
            asyncio.run(r)
    except Exception as e:  # noqa: BLE001
        log(f"close: {type(e).__name__}: {e}")


async def _aclose(client: Client) -> None:
    if client.close is None:
        return
    try:
        r = client.close()
        if inspect.isawaitable(r):
            await r
    except Exception as e:  # noqa: BLE001
        log(f"close: {type(e).__name__}: {e}")


# ---------------------------------------------------------------------------------------
# Warm-up: a throwaway loopback server answering 200, 503 and TCP resets in turn.


class _WarmHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    counter = [0]
    lock = threading.Lock()

    def log_message(self, *args):  # quiet
        pass

    def _handle(self):
        with self.lock:
            self.counter[0] += 1
            n = self.counter[0]
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        if n % 4 == 2:  # a TCP reset: SO_LINGER 0, then close
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        status, body = (503, b"warm-up 503") if n % 4 == 1 else (200, b"ok")
        # One write for head and body (two small segments meet Nagle and delayed ACKs).
        head = f"HTTP/1.1 {status} {'OK' if status == 200 else 'Unavailable'}\r\ncontent-length: {len(body)}\r\n\r\n"
        self.wfile.write(head.encode() + (b"" if self.command == "HEAD" else body))

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = do_PATCH = _handle


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512

    def handle_error(self, request, client_address):  # resets are expected
        pass


def _warm_up(build, cfg: Config, threads: int) -> None:
    server = _QuietServer(("127.0.0.1", 0), _WarmHandler)
    t = threading.Thread(target=server.serve_forever, daemon=True, name="herd-warmup")
    t.start()
    try:
        wcfg = Config(client=cfg.client, url=f"http://127.0.0.1:{server.server_address[1]}/",
                      method=cfg.method, pool=cfg.pool, timeout_ms=cfg.timeout_ms, options=cfg.options)
        global _target
        _target = (wcfg.method, wcfg.url)
        client = build(wcfg, True)
        sink = lambda obj: None  # noqa: E731
        n = WARMUP_BATCHES * WARMUP_BATCH
        if inspect.iscoroutinefunction(client.call):
            async def go():
                for b in range(WARMUP_BATCHES):
                    await _drive_async(client.call, range(b * WARMUP_BATCH, (b + 1) * WARMUP_BATCH), sink)
                await _aclose(client)
            asyncio.run(go())
        else:
            runner = _SyncRunner(client.call, max(threads, WARMUP_BATCH))
            for i in range(n):
                runner.submit(i, sink)
                if (i + 1) % WARMUP_BATCH == 0:
                    with runner.cv:
                        while runner.outstanding:
                            runner.cv.wait()
            runner.drain()
            _close(client)
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------------------
# The protocol loop.


def _read_ids(stdin, put) -> None:
    """Read request lines; ``put((id, method, path))`` for each (method and path None when
    the line has none), ``put(None)`` at EOF."""
    for n, raw in enumerate(stdin, start=1):
        line = raw.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
            rid, method, path = msg.get("id"), msg.get("method"), msg.get("path")
        except (ValueError, AttributeError):
            rid = method = path = None
        if not isinstance(rid, int) or isinstance(rid, bool) or not 0 <= rid < 2**53:
            fail(f"stdin line {n}: expected {{\"id\":N}}, got {line[:200]!r}")
        if not (method is None or isinstance(method, str)) or not (
                path is None or (isinstance(path, str) and path.startswith("/"))):
            fail(f"stdin line {n}: method and path, when present, must be strings "
                 f"(path starting with /), got {line[:200]!r}")
        put((rid, method, path))
    put(None)


def main(clients: dict, options: Optional[dict] = None, *, warmup: bool = True,
         threads: Optional[int] = None, argv=None) -> None:
    declared = options or {}
    cfg = parse_args(sys.argv[1:] if argv is None else argv, clients, declared)
    build = clients[cfg.client]
    threads = threads or max(cfg.pool, 1024)

    if warmup:
        _warm_up(build, cfg, threads)
    global _target
    _target = (cfg.method, cfg.url)
    client = build(cfg, False)
    out = _Output(sys.stdout.buffer)
    out.write({"herd_adapter": PROTOCOL, "client": cfg.client, "policy": client.policy})

    stdin = sys.stdin.buffer
    if inspect.iscoroutinefunction(client.call):
        ids: queue.SimpleQueue = queue.SimpleQueue()
        reader = threading.Thread(target=_read_ids, args=(stdin, ids.put), daemon=True, name="herd-stdin")

        async def go():
            reader.start()
            await _drive_async(client.call, ids, out.write)
            await _aclose(client)

        asyncio.run(go())
    else:
        runner = _SyncRunner(client.call, threads)
        _read_ids(stdin, lambda req: req is not None and runner.submit(req, out.write))
        runner.drain()
        _close(client)
    out.write({"done": True})
    sys.stderr.flush()
    os._exit(0)  # no library thread left behind may hold the exit up
