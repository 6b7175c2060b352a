"""populate-worker's signature on its calls to function makes, as webhook senders sign theirs.

Each call carries ``Drover-Signature: t=<unix seconds>,v1=<hex>``, the hex being HMAC-SHA256,
keyed with the secret the worker and the functions share (the worker's
``POPULATE_WORKER_FUNCTION_SECRET``, here ``DROVER_FUNCTION_SECRET``), of ``"<t>.<body>"``. While
a secret is rotated the worker sends one ``v1`` per secret. :func:`verify` accepts a call signed
with one of the secrets it knows, at most :data:`TOLERANCE` seconds from now.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections.abc import Mapping, Sequence

from .errors import DroverError

HEADER = "Drover-Signature"
# Seconds a signed time may be away from this clock: older calls are refused as replays.
TOLERANCE = 300.0
# The environment variable serve reads the secret from (comma separated for several).
SECRET_ENV = "DROVER_FUNCTION_SECRET"


class SignatureError(DroverError):
    """A call the function refuses: ``reason`` is ``unsigned``, ``bad`` or ``stale``."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


def _secrets(secret: str | Sequence[str]) -> list[str]:
    return [secret] if isinstance(secret, str) else list(secret)


def _mac(secret: str, ts: str, body: bytes) -> str:
    return hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()


def sign(secret: str | Sequence[str], body: bytes, timestamp: float | None = None) -> str:
    """The Drover-Signature value for body sent at timestamp (now by default), as the worker
    sends it; for tests and for anything else that calls a served make."""
    ts = str(int(time.time() if timestamp is None else timestamp))
    return ",".join([f"t={ts}"] + [f"v1={_mac(s, ts, body)}" for s in _secrets(secret)])


def verify(
    secret: str | Sequence[str], header: str | None, body: bytes, now: float | None = None, tolerance: float = TOLERANCE
) -> None:
    """Raises SignatureError unless header signs body with one of secret's values, at most
    tolerance seconds from now. Signatures are compared in constant time."""
    if not header:
        raise SignatureError("unsigned", f"unsigned call: no {HEADER} header (set POPULATE_WORKER_FUNCTION_SECRET on the worker)")
    ts, sigs = "", []
    for part in header.split(","):
        k, _, v = part.strip().partition("=")
        if k == "t":
            ts = v
        elif k == "v1":
            sigs.append(v)
    if not ts.isdigit() or not sigs:
        raise SignatureError("bad", f"bad signature: want {HEADER}: t=<unix seconds>,v1=<hex>")
    skew = abs((time.time() if now is None else now) - int(ts))
    if skew > tolerance:
        raise SignatureError("stale", f"stale signature: signed {int(skew)} s from now, more than {int(tolerance)} s")
    for s in _secrets(secret):
        want = _mac(s, ts, body)
        # Every signature is compared, so the time taken does not tell which one matched.
        if any([hmac.compare_digest(want, sig) for sig in sigs]):
            return
    raise SignatureError("bad", "bad signature: not signed with this function's secret")


def secrets_from_env(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The secrets in DROVER_FUNCTION_SECRET, comma separated; none when it is unset or empty."""
    return [s for s in (p.strip() for p in environ.get(SECRET_ENV, "").split(",")) if s]
