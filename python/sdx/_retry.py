"""Retries and a circuit breaker for sdx.remote, free of gRPC (unit-testable without a server).

    policy = RetryPolicy(max_attempts=5, base_s=0.05, cap_s=2.0, total_s=30.0)
    breaker = CircuitBreaker(failure_threshold=5, cooldown_s=5.0)
    result = call_with_retries(attempt, is_retryable, policy, breaker, what="Run")

`attempt()` makes one call; `is_retryable(exc)` answers None for an error that is not transient (raised at
once), or a float: the server's pushback in seconds (0 when it gave none). Transient errors are retried with
exponential backoff and full jitter (sleep uniform in [0, min(cap, base * 2^k)]), or the server's pushback
when it named one, until `max_attempts` calls or `total_s` seconds have gone. The breaker counts consecutive
transient failures across calls: past the threshold it opens, and calls fail fast with RemoteUnavailable
until the cool-down ends; then one probe goes through (half-open), and its success closes the breaker.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional, TypeVar

from ._sdx import SdxError

T = TypeVar("T")


class RemoteUnavailable(SdxError):
    """The sdx serve server cannot be reached: retries were spent, or the circuit breaker is open."""


RemoteUnavailable.__module__ = "sdx"  # raised and caught as sdx.RemoteUnavailable


@dataclass
class RetryPolicy:
    """How transient errors (UNAVAILABLE, RESOURCE_EXHAUSTED) are retried.

    max_attempts: calls in all, the first included (default 5); base_s, cap_s: the backoff's base and cap
    (default 50 ms, 2 s); total_s: no retry starts after this many seconds since the first call (default 30).
    """
    max_attempts: int = 5
    base_s: float = 0.05
    cap_s: float = 2.0
    total_s: float = 30.0

    def backoff(self, retry: int, rng: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number `retry` (0 for the first): full jitter."""
        return rng() * min(self.cap_s, self.base_s * (2.0 ** retry))


class CircuitBreaker:
    """Closed -> open after `failure_threshold` consecutive failures -> half-open after `cooldown_s` (one
    probe call) -> closed on its success, open again on its failure. Thread-safe."""

    CLOSED, OPEN, HALF_OPEN = "closed", "open", "half-open"

    def __init__(self, failure_threshold: int = 5, cooldown_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if failure_threshold < 1:
            raise ValueError("sdx.remote: failure_threshold must be at least 1")
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: Optional[float] = None
        self._probing = False

    @property
    def state(self) -> str:
        with self._lock:
            return self._state_locked()

    def _state_locked(self) -> str:
        if self._opened_at is None:
            return self.CLOSED
        if self._clock() - self._opened_at >= self.cooldown_s:
            return self.HALF_OPEN
        return self.OPEN

    def before_call(self, what: str) -> None:
        """Raises RemoteUnavailable while open (or while another caller holds the half-open probe)."""
        with self._lock:
            state = self._state_locked()
            if state == self.CLOSED:
                return
            if state == self.HALF_OPEN and not self._probing:
                self._probing = True
                return
            left = max(0.0, self.cooldown_s - (self._clock() - self._opened_at))
            raise RemoteUnavailable(f"sdx.remote: {what}: circuit breaker open after {self._failures} consecutive "
                                    f"failures; next probe in {left:.2f} s")

    def record_success(self) -> None:
        with self._lock:
            self._failures, self._opened_at, self._probing = 0, None, False

    def record_failure(self) -> None:
        with self._lock:
            self._failures += 1
            if self._probing or self._failures >= self.failure_threshold:
                self._opened_at = self._clock()
            self._probing = False

    def release_probe(self) -> None:
        """The probe ended with an answer that says nothing about reachability (a non-transient error)."""
        self.record_success()


def call_with_retries(attempt: Callable[[], T], is_retryable: Callable[[BaseException], Optional[float]],
                      policy: RetryPolicy, breaker: CircuitBreaker, what: str,
                      sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                      rng: Callable[[], float] = random.random) -> T:
    """attempt() under the policy and the breaker; RemoteUnavailable when retries are spent."""
    start = clock()
    last: Optional[BaseException] = None
    for n in range(max(1, policy.max_attempts)):
        breaker.before_call(what)
        try:
            result = attempt()
        except Exception as e:  # noqa: BLE001 (classified just below)
            pushback = is_retryable(e)
            if pushback is None:
                breaker.release_probe()  # the server answered: it is reachable
                raise
            breaker.record_failure()
            last = e
            wait = pushback if pushback > 0 else policy.backoff(n, rng)
            if n + 1 >= policy.max_attempts or clock() - start + wait > policy.total_s:
                break
            sleep(wait)
            continue
        breaker.record_success()
        return result
    raise RemoteUnavailable(f"sdx.remote: {what} failed after {n + 1} attempt(s) in {clock() - start:.2f} s: "
                            f"{_describe(last)}") from last


def _describe(e: Optional[BaseException]) -> str:
    code = getattr(e, "code", None)
    details = getattr(e, "details", None)
    if callable(code) and callable(details):
        try:
            return f"{code().name}: {details()}"
        except Exception:  # noqa: BLE001 (a fake or half-built error: fall back to its text)
            pass
    return str(e)
