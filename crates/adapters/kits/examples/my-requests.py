"""Your requests client in herd: arms/my-requests.py, next to a copy of herd's
crates/adapters/kits/python/herd_arm.py. Set up the Session exactly as your service does; the kit
speaks herd's protocol.

    python3 arms/my-requests.py --client my-requests --url http://127.0.0.1:PORT/ \\
        [--pool 256] [--timeout-ms 2000] [--options '{"total":5}']
"""

import re

import herd_arm
import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool
from urllib3.util.retry import Retry


class CountingConnection(HTTPConnection):
    """urllib3 sends every attempt, first and retries, through request() on the caller's
    thread: count it there, for the request herd_arm is running on this thread."""

    def request(self, *args, **kwargs):
        herd_arm.count_attempt()
        return super().request(*args, **kwargs)


class CountingPool(HTTPConnectionPool):
    ConnectionCls = CountingConnection


def build(cfg, warmup):
    total = cfg.options.get("total", 4)  # the scenario's `options` may change these
    backoff = cfg.options.get("backoff_factor", 0.25)
    retry = Retry(
        total=total,
        backoff_factor=0 if warmup else backoff,  # the warm-up runs the same code without waiting
        status_forcelist=(429, 502, 503, 504),
        respect_retry_after_header=not warmup,
    )
    session = requests.Session()
    adapter = HTTPAdapter(pool_connections=1, pool_maxsize=cfg.pool, max_retries=retry)
    adapter.poolmanager.pool_classes_by_scheme = {"http": CountingPool}  # herd's upstream is http
    session.mount("http://", adapter)

    def call(req):
        try:
            r = session.request(req.method, req.url, headers=req.headers, timeout=cfg.timeout_s)
            return herd_arm.Result(status=r.status_code)
        except requests.exceptions.RetryError as e:  # retries exhausted on a status
            m = re.search(r"too many (\d{3}) error responses", str(e))
            if m:
                return herd_arm.Result(status=int(m.group(1)))
            raise

    policy = (f"requests {requests.__version__}: Retry(total={total}, backoff_factor={backoff}, "
              f"status_forcelist=429/502/503/504, Retry-After respected); pool {cfg.pool}; "
              f"timeout {cfg.timeout_ms or 'none'} ms per attempt")
    return herd_arm.Client(policy=policy, call=call, close=session.close)


herd_arm.main({"my-requests": build}, options={"my-requests": {"total": int, "backoff_factor": float}})
