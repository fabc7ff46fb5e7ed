"""The most-installed Python retry packages, stamina and backoff, each at its defaults around
httpx, as arms beside herd's replicas of them (herd_retry::Profile::{Stamina, Backoff}).

Both are decorators that retry what the decorated function raises, so the function is what
their READMEs show: an httpx request and ``raise_for_status()``, retried on
``httpx.HTTPError`` (every failed status and every transport error, timeouts included).
Kept apart from arm.py so that arm.py stays the adapter table and this file stays "the
packages as their users write them".

Attempts are counted by an httpx transport under the client, where each attempt goes out.
Only the warm-up client changes the waits: to 1 ms, so it exercises the retry paths quickly.
"""

from importlib.metadata import version

import herd_arm


def counting_client(cfg):
    """An httpx.Client with --pool connections whose transport counts every attempt."""
    import httpx

    class Counting(httpx.BaseTransport):
        def __init__(self, inner):
            self.inner = inner

        def handle_request(self, request):
            herd_arm.count_attempt()
            return self.inner.handle_request(request)

        def close(self):
            self.inner.close()

    limits = httpx.Limits(max_connections=cfg.pool, max_keepalive_connections=cfg.pool)
    # None: no timeout (httpx's own default would be 5 s).
    return httpx.Client(transport=Counting(httpx.HTTPTransport(limits=limits)),
                        timeout=httpx.Timeout(cfg.timeout_s))


def timeout_text(cfg):
    return (f"httpx.Timeout({cfg.timeout_ms} ms) per attempt, retried" if cfg.timeout_ms
            else "no timeout")


def answer(call, req):
    """Runs the retried ``call``; an exhausted failed status is answered with that status."""
    import httpx

    try:
        r = call(req)
    except httpx.HTTPStatusError as e:
        return herd_arm.Result(status=e.response.status_code)
    return herd_arm.Result(status=r.status_code)


# stamina (src/stamina/_core.py): @stamina.retry(on=...) with attempts 10, timeout 45 s,
# wait_initial 0.1, wait_max 5, wait_jitter 1, wait_exp_base 2: the wait before retry n is
# min(5, 0.1·2^(n−1) + U(0, 1)) s, capped *after* the jitter, so from the 7th retry on
# every wait is exactly 5.00 s.
def stamina_arm(cfg, warmup):
    import httpx
    import stamina
    from stamina import instrumentation

    # stamina logs every retry through stdlib logging (stderr when nothing is configured);
    # the waits are the same without the log line.
    instrumentation.set_on_retry_hooks([])
    http = counting_client(cfg)
    waits = dict(wait_initial=0.001, wait_jitter=0, wait_max=0.001) if warmup else {}

    @stamina.retry(on=httpx.HTTPError, **waits)
    def attempt(req):
        r = http.request(req.method, req.url, headers=req.headers)
        r.raise_for_status()
        return r

    policy = (
        f"stamina {version('stamina')} (tenacity {version('tenacity')}) @stamina.retry(on=httpx.HTTPError) "
        f"defaults: attempts 10, timeout 45 s, wait min(5, 0.1·2^(n−1) + U(0, 1)) s (exactly 5 s from "
        f"retry 7 on); retry hooks off (no log line per retry); around httpx {version('httpx')} Client with "
        f"raise_for_status(), Limits(max_connections={cfg.pool}); {timeout_text(cfg)}; any method; "
        f"attempts counted by a transport under the client"
    )
    return herd_arm.Client(policy=policy, call=lambda req: answer(attempt, req), close=http.close)


# backoff (backoff/_decorator.py, _wait_gen.py, _jitter.py): on_exception(expo, ...) with
# max_tries None and max_time None (retries forever), expo(base=2, factor=1) yielding 1, 2,
# 4, ... s, and full_jitter drawing U(0, value).
def backoff_arm(cfg, warmup):
    import backoff
    import httpx

    http = counting_client(cfg)
    if warmup:
        wait_gen, kw = backoff.constant, dict(interval=0.001, jitter=None)
    else:
        wait_gen, kw = backoff.expo, {}

    # logger=None: backoff logs each retry at INFO on its 'backoff' logger, unseen without
    # a handler; none is wanted here either way.
    @backoff.on_exception(wait_gen, httpx.HTTPError, logger=None, **kw)
    def attempt(req):
        r = http.request(req.method, req.url, headers=req.headers)
        r.raise_for_status()
        return r

    policy = (
        f"backoff {version('backoff')} @backoff.on_exception(backoff.expo, httpx.HTTPError) defaults: "
        f"max_tries None, max_time None (retries forever), wait U(0, 2^(n−1)) s (expo + full_jitter); "
        f"around httpx {version('httpx')} Client with raise_for_status(), Limits(max_connections={cfg.pool}); "
        f"{timeout_text(cfg)}; any method; attempts counted by a transport under the client"
    )
    return herd_arm.Client(policy=policy, call=lambda req: answer(attempt, req), close=http.close)
