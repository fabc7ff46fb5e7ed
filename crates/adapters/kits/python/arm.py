"""herd external-arm adapter (protocol v1) for Python clients, on the herd_arm kit.

    .venv/bin/python arm.py --client py-requests --url http://127.0.0.1:PORT/ \\
        [--method GET] [--pool 256] [--timeout-ms 2000] [--options '{"total":5}']

Clients (README.md has the table):
  py-requests               requests.Session + HTTPAdapter(max_retries=urllib3 Retry(...))
  py-tenacity               tenacity Retrying(wait_random_exponential, stop_after_attempt) around
                            a plain requests session (urllib3 retries off)
  py-httpx-retries          httpx.Client + httpx-retries RetryTransport(Retry(total=3, backoff_factor=0.5))
  py-httpx-retries-async    the same with httpx.AsyncClient, on asyncio
  py-pybreaker              pybreaker CircuitBreaker() defaults around a requests session without
                            retries; a call the open breaker turns away is answered attempts 0
  py-boto3-standard         boto3 S3 (or DynamoDB) client, retries={'mode': 'standard'}, at herd's front
  py-boto3-adaptive         the same with retries={'mode': 'adaptive'} (client-side rate limiter)
  py-stamina, py-backoff    @stamina.retry / @backoff.on_exception(backoff.expo) defaults around
                            httpx with raise_for_status() (packages.py)
  py-grpcio                 a grpcio channel configured by the arm's service config, unary calls
                            with raw bytes (grpc_clients.py)

Attempts are counted where each attempt goes on the wire (a urllib3 connection class, an
httpx transport under the retrying one, botocore's before-send event), so they are exact
whatever the outcome.
"""

import os
import re
import sys
from importlib.metadata import version

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc_clients  # noqa: E402
import herd_arm  # noqa: E402
import packages  # noqa: E402


def timeout_text(cfg, how):
    return f"timeout {cfg.timeout_ms} ms {how}" if cfg.timeout_ms else "no timeout"


# ---------------------------------------------------------------------------------------
# requests + urllib3 Retry, mounted as requests' docs teach.

URLLIB3_OPTIONS = {
    "total": int,
    "backoff_factor": float,
    "backoff_max": float,
    "backoff_jitter": float,
    "status_forcelist": [int],
    "respect_retry_after_header": bool,
    "retry_after_max": int,
}


def counting_session(pool, retries):
    """A requests Session with one HTTPAdapter whose urllib3 connections count attempts.

    urllib3 makes every attempt (first and retries) through ``HTTPConnection.request`` on the
    caller's thread, so the connection class counts it for the kit's current request.
    """
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class CountingHTTPConnection(HTTPConnection):
        def request(self, *args, **kwargs):
            herd_arm.count_attempt()
            return super().request(*args, **kwargs)

    class CountingHTTPSConnection(HTTPSConnection):
        def request(self, *args, **kwargs):
            herd_arm.count_attempt()
            return super().request(*args, **kwargs)

    class CountingHTTPConnectionPool(HTTPConnectionPool):
        ConnectionCls = CountingHTTPConnection

    class CountingHTTPSConnectionPool(HTTPSConnectionPool):
        ConnectionCls = CountingHTTPSConnection

    session = requests.Session()
    adapter = HTTPAdapter(pool_connections=1, pool_maxsize=pool, max_retries=retries)
    adapter.poolmanager.pool_classes_by_scheme = {
        "http": CountingHTTPConnectionPool,
        "https": CountingHTTPSConnectionPool,
    }
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


# urllib3 raises MaxRetryError(reason=ResponseError("too many 503 error responses")) when the
# retries run out on a status (raise_on_status, the default), and requests wraps it in
# RetryError: the library ended on a response, so the answer carries its status (as the
# undici adapter does for its thrown exhausted status).
EXHAUSTED_STATUS = re.compile(r"too many (\d{3}) error responses")


def requests_arm(cfg, warmup):
    import requests
    from urllib3.util.retry import Retry

    o = cfg.options
    kw = dict(
        total=o.get("total", 3),
        backoff_factor=o.get("backoff_factor", 0.5),
        status_forcelist=tuple(o.get("status_forcelist", (429, 500, 502, 503, 504))),
    )
    for key in ("backoff_max", "backoff_jitter", "respect_retry_after_header", "retry_after_max"):
        if key in o:
            kw[key] = o[key]
    retry = Retry(**kw)
    if warmup:
        retry = Retry(**{**kw, "backoff_factor": 0, "respect_retry_after_header": False})
    session = counting_session(cfg.pool, retry)
    timeout = cfg.timeout_s

    def call(req):
        try:
            r = session.request(req.method, req.url, headers=req.headers, timeout=timeout)
        except requests.exceptions.RetryError as e:
            m = EXHAUSTED_STATUS.search(str(e))
            if m:
                return herd_arm.Result(status=int(m.group(1)))
            raise
        return herd_arm.Result(status=r.status_code)

    r = retry
    policy = (
        f"requests {version('requests')} + urllib3 {version('urllib3')}: Session with one "
        f"HTTPAdapter(pool_connections=1, pool_maxsize={cfg.pool}, pool_block=False, "
        f"max_retries=Retry(total={r.total}, backoff_factor={r.backoff_factor}, "
        f"backoff_max={r.backoff_max}, backoff_jitter={r.backoff_jitter}, "
        f"status_forcelist={sorted(r.status_forcelist)}, "
        f"respect_retry_after_header={r.respect_retry_after_header}, "
        f"retry_after_max={r.retry_after_max})); delay before retry n: 0 for n=1, "
        f"backoff_factor·2^(n−1) after; Retry-After on 413/429/503 replaces it; "
        f"methods {','.join(sorted(r.allowed_methods))}; an exhausted status raises RetryError "
        f"(answered with that status); {timeout_text(cfg, 'per attempt (connect and read)')}; "
        f"attempts counted per urllib3 connection request"
    )
    return herd_arm.Client(policy=policy, call=call, close=session.close)


# ---------------------------------------------------------------------------------------
# tenacity around a plain requests session.

TENACITY_OPTIONS = {"multiplier": float, "max": float, "min": float, "attempts": int}


def tenacity_arm(cfg, warmup):
    import requests
    from tenacity import (Retrying, retry_if_exception_type, retry_if_result,
                          stop_after_attempt, wait_none, wait_random_exponential)

    o = cfg.options
    multiplier, wmax, wmin = o.get("multiplier", 0.5), o.get("max", 30), o.get("min", 0)
    attempts = o.get("attempts", 4)
    session = counting_session(cfg.pool, 0)
    timeout = cfg.timeout_s
    retrying = Retrying(
        wait=wait_none() if warmup else wait_random_exponential(multiplier=multiplier, max=wmax, min=wmin),
        stop=stop_after_attempt(attempts),
        retry=(retry_if_exception_type(requests.exceptions.ConnectionError)
               | retry_if_result(lambda r: r.status_code >= 500)),
        # Out of attempts: the last response as it was, or the last exception re-raised
        # (rather than tenacity's RetryError wrapping either).
        retry_error_callback=lambda state: state.outcome.result(),
    )

    def attempt(req):
        return session.request(req.method, req.url, headers=req.headers, timeout=timeout)

    def call(req):
        r = retrying(attempt, req)
        return herd_arm.Result(status=r.status_code)

    policy = (
        f"tenacity {version('tenacity')} Retrying(wait=wait_random_exponential(multiplier={multiplier}, "
        f"max={wmax}, min={wmin}): U[{wmin}, min({multiplier}·2^(n−1), {wmax})] s before retry n, "
        f"stop=stop_after_attempt({attempts}), retry on status >= 500 or requests ConnectionError "
        f"(incl. ConnectTimeout; not ReadTimeout), retry_error_callback returns the last outcome) "
        f"around requests {version('requests')} + urllib3 {version('urllib3')}: Session, "
        f"HTTPAdapter(pool_connections=1, pool_maxsize={cfg.pool}, max_retries=0); "
        f"no Retry-After handling; {timeout_text(cfg, 'per attempt (connect and read)')}; "
        f"attempts counted per urllib3 connection request"
    )
    return herd_arm.Client(policy=policy, call=call, close=session.close)


# ---------------------------------------------------------------------------------------
# httpx + httpx-retries.

HTTPX_RETRIES_OPTIONS = {
    "total": int,
    "backoff_factor": float,
    "max_backoff_wait": float,
    "backoff_jitter": float,
    "status_forcelist": [int],
    "respect_retry_after_header": bool,
}


def httpx_retries_arm(cfg, warmup, use_async=False):
    import httpx
    from httpx_retries import Retry, RetryTransport

    o = cfg.options
    kw = dict(total=o.get("total", 3), backoff_factor=o.get("backoff_factor", 0.5))
    for key in ("max_backoff_wait", "backoff_jitter", "status_forcelist", "respect_retry_after_header"):
        if key in o:
            kw[key] = o[key]
    retry = Retry(**{**kw, "backoff_factor": 0, "respect_retry_after_header": False} if warmup else kw)
    # RetryTransport's own default inner transport has httpx's default Limits (100
    # connections); the arm's pool is --pool, so the inner transport is given, with a
    # counting layer between the two: RetryTransport sends every attempt through it.
    limits = httpx.Limits(max_connections=cfg.pool, max_keepalive_connections=cfg.pool)
    timeout = httpx.Timeout(cfg.timeout_s)  # None: no timeout (httpx's default would be 5 s)

    if use_async:
        class Counting(httpx.AsyncBaseTransport):
            def __init__(self, inner):
                self.inner = inner

            async def handle_async_request(self, request):
                herd_arm.count_attempt()
                return await self.inner.handle_async_request(request)

            async def aclose(self):
                await self.inner.aclose()

        http = httpx.AsyncClient(transport=RetryTransport(
            transport=Counting(httpx.AsyncHTTPTransport(limits=limits)), retry=retry), timeout=timeout)

        async def call(req):
            r = await http.request(req.method, req.url, headers=req.headers)
            return herd_arm.Result(status=r.status_code)

        close = http.aclose
    else:
        class Counting(httpx.BaseTransport):
            def __init__(self, inner):
                self.inner = inner

            def handle_request(self, request):
                herd_arm.count_attempt()
                return self.inner.handle_request(request)

            def close(self):
                self.inner.close()

        http = httpx.Client(transport=RetryTransport(
            transport=Counting(httpx.HTTPTransport(limits=limits)), retry=retry), timeout=timeout)

        def call(req):
            r = http.request(req.method, req.url, headers=req.headers)
            return herd_arm.Result(status=r.status_code)

        close = http.close

    r = retry
    policy = (
        f"httpx {version('httpx')} {'AsyncClient' if use_async else 'Client'} + httpx-retries "
        f"{version('httpx-retries')} RetryTransport(retry=Retry(total={r.total}, "
        f"backoff_factor={r.backoff_factor}, backoff_jitter={r.backoff_jitter}, "
        f"max_backoff_wait={r.max_backoff_wait}, respect_retry_after_header={r.respect_retry_after_header}, "
        f"status_forcelist={sorted(int(s) for s in r.status_forcelist)})): delay before retry n "
        f"backoff_factor·2^n·U[1−jitter, 1] s, capped at max_backoff_wait; Retry-After replaces it "
        f"(capped at max_backoff_wait); an exhausted status is returned; retries "
        f"TimeoutException/NetworkError/RemoteProtocolError; methods "
        f"{','.join(sorted(r.allowed_methods))}; inner {'Async' if use_async else ''}HTTPTransport "
        f"Limits(max_connections={cfg.pool}, max_keepalive_connections={cfg.pool}); "
        f"{timeout_text(cfg, 'httpx.Timeout per attempt (connect, read, write, pool each)')}; "
        f"attempts counted by a transport under RetryTransport"
    )
    return herd_arm.Client(policy=policy, call=call, close=close)


# ---------------------------------------------------------------------------------------
# pybreaker around a plain requests session (no retries), as its README teaches:
# ``breaker.call(func)``, where func raises on a failed response.

PYBREAKER_OPTIONS = {"fail_max": int, "reset_timeout": float, "success_threshold": int}


class UpstreamStatus(Exception):
    """A failed response (5xx, 408, 429), raised so that the breaker counts it."""

    def __init__(self, status):
        super().__init__(f"status {status}")
        self.status = status


def failed_status(status):
    """What the breaker counts as a failure: herd_retry::breaker::is_failure's statuses."""
    return status >= 500 or status in (408, 429)


def pybreaker_arm(cfg, warmup):
    import pybreaker

    o = cfg.options
    fail_max = o.get("fail_max", 5)
    reset_timeout = o.get("reset_timeout", 60)
    success_threshold = o.get("success_threshold", 1)
    # Warm-up only: the same code paths (trip, reject, half-open probe) without waiting.
    breaker = pybreaker.CircuitBreaker(fail_max=fail_max, reset_timeout=0.001 if warmup else reset_timeout,
                                       success_threshold=success_threshold)
    session = counting_session(cfg.pool, 0)
    timeout = cfg.timeout_s

    def attempt(req):
        r = session.request(req.method, req.url, headers=req.headers, timeout=timeout)
        if failed_status(r.status_code):
            raise UpstreamStatus(r.status_code)
        return r

    def call(req):
        try:
            r = breaker.call(attempt, req)
        except UpstreamStatus as e:
            return herd_arm.Result(status=e.status)
        except pybreaker.CircuitBreakerError as e:
            if req.attempts == 0:
                # Turned away while open: nothing was sent.
                return herd_arm.Result(ok=False, error="CircuitBreakerError", attempts=0, rejected=1)
            # The call that tripped it (or a failed trial call) did reach the server; pybreaker
            # raises CircuitBreakerError in place of its error, chained to it.
            cause = e.__context__
            if isinstance(cause, UpstreamStatus):
                return herd_arm.Result(status=cause.status, ok=False)
            return herd_arm.Result(ok=False, error=type(cause).__name__ if cause else "CircuitBreakerError")
        return herd_arm.Result(status=r.status_code)

    policy = (
        f"pybreaker {version('pybreaker')} CircuitBreaker(fail_max={fail_max}, reset_timeout={reset_timeout}, "
        f"success_threshold={success_threshold}): opens at {fail_max} failures in a row (the call that "
        f"trips it reached the server and raises CircuitBreakerError), rejects while open, then lets calls "
        f"through (half-open) until a result decides; breaker.call holds the breaker's lock for the whole "
        f"call, so calls through it run one at a time; around requests {version('requests')} + urllib3 "
        f"{version('urllib3')}: Session, HTTPAdapter(pool_connections=1, pool_maxsize={cfg.pool}, "
        f"max_retries=0), a 5xx, 408 or 429 raised as a failure; {timeout_text(cfg, 'per call (connect and read)')}; "
        f"attempts counted per urllib3 connection request, rejections answered with attempts 0"
    )
    return herd_arm.Client(policy=policy, call=call, close=session.close)

# ---------------------------------------------------------------------------------------
# boto3 / botocore: the AWS SDK for Python, standard and adaptive retry modes.

BOTO3_OPTIONS = {"service": str, "max_attempts": int}


def boto3_arm(mode):
    """An S3 (default) or DynamoDB client in retry ``mode``, pointed at herd's front.

    One client object per arm: botocore keeps its retry quota (and, in adaptive mode, its
    rate limiter) per client object, so the arm's calls share them, as an application's
    would. Dummy credentials and region us-east-1; requests are signed as for AWS.
    """

    def build(cfg, warmup):
        import threading
        from urllib.parse import urlsplit

        import boto3
        import botocore
        from botocore.config import Config as BotoConfig
        from botocore.exceptions import ClientError

        o = cfg.options
        service = o.get("service", "s3")
        if service not in ("s3", "dynamodb"):
            herd_arm.fail(f"--options: service must be \"s3\" or \"dynamodb\", got {service!r}")
        retries = {"mode": mode}
        if "max_attempts" in o:
            retries["total_max_attempts"] = o["max_attempts"]
        url = urlsplit(cfg.url)
        endpoint = f"{url.scheme}://{url.netloc}"
        timeout = cfg.timeout_s
        session = boto3.session.Session(
            aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1"
        )
        config = BotoConfig(
            retries=retries,
            max_pool_connections=max(cfg.pool, 1),
            connect_timeout=timeout if timeout else 60,
            read_timeout=timeout if timeout else 60,
            s3={"addressing_style": "path"},
        )
        client = session.client(service, endpoint_url=endpoint, config=config)
        current = threading.local()

        def before_send(request, **kwargs):
            # botocore runs every attempt (first and retries, after adaptive mode's token
            # wait) through before-send on the caller's thread.
            req = getattr(current, "req", None)
            if req is not None:
                request.headers["x-herd-request"] = req.header_value
            herd_arm.count_attempt()
            return None  # anything else would replace the response

        client.meta.events.register_last("before-send", before_send)

        def one(req):
            if service == "s3":
                r = client.get_object(Bucket="herd", Key="k")
                r["Body"].read()
                r["Body"].close()
            else:
                r = client.get_item(TableName="herd", Key={"id": {"S": "k"}})
            return r["ResponseMetadata"]["HTTPStatusCode"]

        def call(req):
            current.req = req
            try:
                return herd_arm.Result(status=one(req))
            except ClientError as e:
                status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                return herd_arm.Result(status=status, ok=False, error=e.response.get("Error", {}).get("Code") or "ClientError")
            finally:
                current.req = None

        what = "S3 GetObject(Bucket='herd', Key='k'), path-style" if service == "s3" else "DynamoDB GetItem(TableName='herd')"
        policy = (
            f"boto3 {version('boto3')} / botocore {botocore.__version__} {service} client, "
            f"Config(retries={retries}) (botocore's {mode} mode: its default attempts, backoff, retry "
            f"quota{' and client-side rate limiter' if mode == 'adaptive' else ''}, one client object for the arm), "
            f"endpoint_url={endpoint}, dummy credentials, region us-east-1; each call {what}; "
            f"{timeout_text(cfg, 'connect and read, per attempt')}; attempts counted at botocore's before-send"
        )
        return herd_arm.Client(policy=policy, call=call, close=client.close)

    return build


CLIENTS = {
    "py-requests": requests_arm,
    "py-tenacity": tenacity_arm,
    "py-httpx-retries": httpx_retries_arm,
    "py-httpx-retries-async": lambda cfg, warmup: httpx_retries_arm(cfg, warmup, use_async=True),
    "py-pybreaker": pybreaker_arm,
    # AWS SDK
    "py-boto3-standard": boto3_arm("standard"),
    "py-boto3-adaptive": boto3_arm("adaptive"),
    "py-stamina": packages.stamina_arm,
    "py-backoff": packages.backoff_arm,
    # gRPC
    "py-grpcio": grpc_clients.grpcio_arm,
}
OPTIONS = {
    "py-requests": URLLIB3_OPTIONS,
    "py-tenacity": TENACITY_OPTIONS,
    "py-httpx-retries": HTTPX_RETRIES_OPTIONS,
    "py-httpx-retries-async": HTTPX_RETRIES_OPTIONS,
    "py-pybreaker": PYBREAKER_OPTIONS,
    # AWS SDK
    "py-boto3-standard": BOTO3_OPTIONS,
    "py-boto3-adaptive": BOTO3_OPTIONS,
    "py-stamina": {},
    "py-backoff": {},
    "py-grpcio": grpc_clients.GRPC_OPTIONS,
}

if __name__ == "__main__":
    herd_arm.main(CLIENTS, OPTIONS)
