"""grpcio (gRPC's C-core under Python) as an arm: a channel configured by the arm's service
config, making unary calls with raw bytes (no protoc, no generated code), beside herd's
replica of it (herd_retry::grpc, profile ``grpc-core``).

The scenario's ``options = { service_config = ... }`` is given to the channel unchanged as
``grpc.service_config`` (a JSON string, or the table as JSON), as a gRPC user passes it.
The call goes to the method the config names first (``/herd.Herd/Call`` for ``[{}]``),
which is the method herd's replica looks its policy up for. ``--timeout-ms`` is the call's
deadline, which in gRPC covers every attempt (A6), not one. Kept apart from arm.py so that
arm.py stays the adapter table.

Attempts: grpcio does not expose its retries, so the adapter reads the ``x-herd-attempt``
trailer herd's upstream puts on every gRPC answer (the number of the attempt it answered;
grpcio returns the trailers of the answer that ended the call). A call ended by the
stream's reset has no trailers, and its attempts are not known (null).
"""

import json
from importlib.metadata import version

import herd_arm

GRPC_OPTIONS = {"service_config": (str, dict)}

DEFAULT_PATH = "/herd.Herd/Call"


def service_config_json(options):
    """The arm's service config as JSON text, or None."""
    sc = options.get("service_config")
    if sc is None:
        return None
    text = sc if isinstance(sc, str) else json.dumps(sc)
    try:
        json.loads(text)
    except ValueError as e:
        herd_arm.fail(f"--options: service_config is not JSON ({e})")
    return text


def call_path(sc_text):
    """The method herd calls: the first name of the first method config (A6's lookup then
    finds the config that applies), ``/herd.Herd/Call`` when it names none."""
    if not sc_text:
        return DEFAULT_PATH
    configs = json.loads(sc_text).get("methodConfig") or []
    names = (configs[0].get("name") or []) if configs else []
    if not names:
        return DEFAULT_PATH
    service = names[0].get("service") or "herd.Herd"
    method = names[0].get("method") or "Call"
    return f"/{service}/{method}"


def attempt_of(metadata):
    """The ``x-herd-attempt`` trailer, as an int, or None."""
    for key, value in metadata or ():
        if key == "x-herd-attempt":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def grpcio_arm(cfg, warmup):
    """One grpcio channel for the arm (grpcio keeps its retry throttle per channel)."""
    if warmup:
        # The warm-up server speaks HTTP/1.1 only; a gRPC channel has nothing to warm there.
        return herd_arm.Client(policy="warm-up", call=lambda req: herd_arm.Result(status=200, attempts=1))
    from urllib.parse import urlsplit

    import grpc

    sc = service_config_json(cfg.options)
    path = call_path(sc)
    target = urlsplit(cfg.url).netloc
    options = [("grpc.enable_retries", 1)]
    if sc is not None:
        options.append(("grpc.service_config", sc))
    channel = grpc.insecure_channel(target, options=options)
    # No serializers: the request and the response are bytes.
    stub = channel.unary_unary(path)
    timeout = cfg.timeout_s

    def call(req):
        md = (("x-herd-request", req.header_value),)
        try:
            _, c = stub.with_call(b"", timeout=timeout, metadata=md)
            return herd_arm.Result(status=200, ok=True, attempts=attempt_of(c.trailing_metadata()))
        except grpc.RpcError as e:
            code = e.code()
            return herd_arm.Result(status=200, ok=False, error=code.name if code else "RpcError",
                                   attempts=attempt_of(e.trailing_metadata()))

    policy = (
        f"grpcio {version('grpcio')} (C-core) channel to {target}, "
        f"grpc.service_config={sc if sc is not None else 'none (no retries)'}; unary {path} with raw bytes; "
        f"{'deadline ' + str(cfg.timeout_ms) + ' ms per call (all attempts)' if cfg.timeout_ms else 'no deadline'}; "
        f"attempts from the upstream's x-herd-attempt trailer"
    )
    return herd_arm.Client(policy=policy, call=call, close=channel.close)
