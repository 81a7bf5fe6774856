"""Requests to the judge's endpoint with the policies around each one: the spending budget, the
circuit breaker, rate limits (ratelimit.py), retries with backoff (retry.py) and a deadline on the
whole reply. Knows HTTP and the SDK's errors, nothing of prompts.

Record text is sensitive: it is never logged here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import time
from collections import Counter
from typing import Any

import openai

from ragpulse.scorer.judge.base import JudgeError, Usage
from ragpulse.scorer.judge.budget import Budget
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
from ragpulse.scorer.judge.openai.ratelimit import shared_limiter
from ragpulse.scorer.judge.openai.retry import Backoff, CircuitBreaker, parse_retry_after

# The HTTP library under the openai SDK: httpx2 in recent SDKs, httpx before; its exceptions can
# escape while the body is read.
try:
    import httpx2 as httpx
except ImportError:  # pragma: no cover - older openai SDKs
    import httpx  # type: ignore[no-redef]

log = logging.getLogger(__name__)


class Unsupported(Exception):
    """A 4xx that may name an optional request feature the endpoint does not support."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class _Retryable(Exception):
    """`load`: what the failure says of the endpoint's capacity, for concurrency.py: `timeout` (it
    may still be working on the request), `congested` (429, 503) or `failed` (nothing)."""

    def __init__(self, reason: str, detail: str = "", retry_after_s: float | None = None, load: str = "failed") -> None:
        super().__init__(detail)
        self.reason = reason
        self.retry_after_s = retry_after_s
        self.load = load


def make_client(cfg: OpenAIJudgeConfig) -> openai.OpenAI:
    # Retries are ours (retry.py): the SDK's own would hide 429s from the breaker and budgets.
    if cfg.azure_deployment:
        return openai.AzureOpenAI(
            azure_endpoint=cfg.base_url,
            azure_deployment=cfg.azure_deployment,
            api_version=cfg.azure_api_version,
            api_key=cfg.api_key,
            max_retries=0,
            timeout=cfg.timeout_s,
        )
    return openai.OpenAI(base_url=cfg.base_url, api_key=cfg.api_key or "unused", max_retries=0, timeout=cfg.timeout_s)


class Transport:
    def __init__(self, config: OpenAIJudgeConfig, client: openai.OpenAI | None = None) -> None:
        self.config = config
        self.client = client or make_client(config)
        key_id = hashlib.sha256((config.api_key or "").encode()).hexdigest()[:12]
        self._limiter = shared_limiter(
            (config.base_url, key_id), config.rpm, config.tpm, config.max_concurrency,
            config.adaptive_concurrency, config.timeout_s,
        )
        # What the endpoint was learned to take, for the scorer's gauges.
        self.concurrency = self._limiter.concurrency
        self.breaker = CircuitBreaker(config.breaker_failures, config.breaker_cooldown_s, config.breaker_max_wait_s)
        self._backoff = Backoff(config.backoff_base_s, config.backoff_max_s)
        self._rng = random.Random()
        self._price = config.prices.get(config.model)
        self.budget = Budget(config.budget_usd, config.budget_window, paced=config.budget_pacing)
        # Counters for the scorer's Prometheus families: requests by outcome, failures by reason.
        self.requests: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()

    def call(self, resource: Any, kwargs: dict[str, Any], estimate: int, usage: Usage) -> dict[str, Any]:
        """One request with the policies around it: budget, breaker, rate limits, retries."""
        started = time.monotonic()
        try:
            self.budget.check()
            return self._attempts(resource, kwargs, estimate, usage)
        except JudgeError as exc:
            self.failures[exc.reason] += 1
            raise
        finally:
            usage.seconds += time.monotonic() - started

    def _attempts(self, resource: Any, kwargs: dict[str, Any], estimate: int, usage: Usage) -> dict[str, Any]:
        last: _Retryable | None = None
        for attempt in range(self.config.max_retries + 1):
            if last is not None:
                time.sleep(self._backoff.delay(attempt - 1, last.retry_after_s, self._rng))
            self.breaker.acquire()
            with self._limiter.request(estimate, kwargs.get("max_tokens")) as admitted:
                usage.calls += 1
                try:
                    body = self._send(resource, kwargs, admitted.ticket.deadline_s)
                except _Retryable as exc:
                    admitted.settle(0)
                    self.concurrency.done(admitted.ticket, exc.load)
                    self.breaker.failure()
                    self.requests[exc.reason] += 1
                    log.info("judge request failed (%s), attempt %d", exc.reason, attempt + 1)
                    last = exc
                    continue
                except (Unsupported, JudgeError):
                    admitted.settle(0)
                    self.concurrency.done(admitted.ticket, "failed")
                    self.breaker.neutral()
                    self.requests["rejected"] += 1
                    raise
                self.concurrency.done(admitted.ticket, "ok")
                self.breaker.success()
                self.requests["ok"] += 1
                prompt, completion = _token_counts(body)
                admitted.settle(prompt + completion)
                usage.prompt_tokens += prompt
                usage.completion_tokens += completion
                if self._price is not None:
                    usd = self._price.cost(prompt, completion)
                    usage.cost_usd += usd
                    self.budget.charge(usd)
                return body
        assert last is not None
        raise JudgeError(last.reason, f"after {self.config.max_retries + 1} attempts: {last}")

    def _send(self, resource: Any, kwargs: dict[str, Any], budget_s: float) -> dict[str, Any]:
        """One HTTP request within `budget_s` (latency.py). The SDK's timeout bounds each wait for
        bytes; the deadline here bounds the whole reply, so a server that trickles bytes cannot hold
        a worker forever."""
        deadline = time.monotonic() + budget_s
        try:
            with resource.with_streaming_response.create(**kwargs, timeout=budget_s) as resp:
                chunks = []
                for chunk in resp.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise _Retryable("timeout", f"reply not complete after {budget_s:.0f} s", load="timeout")
        except openai.RateLimitError as exc:
            raise _Retryable("rate_limited", "429", _retry_after(exc.response), load="congested") from None
        except openai.APIStatusError as exc:
            status, text = exc.status_code, _error_text(exc)
            # A rejected optional feature; llama-cpp-python's server reports it as a 500.
            if status not in (401, 403, 404, 408, 429) and re.search(r"response_format|logprob", text, re.I):
                raise Unsupported(f"{status} {text}") from None
            if status >= 500 or status == 408:
                reason = "timeout" if status in (408, 504) else "http_5xx"
                load = "timeout" if reason == "timeout" else "congested" if status == 503 else "failed"
                raise _Retryable(reason, str(status), _retry_after(exc.response), load) from None
            if status in (401, 403):
                raise JudgeError("auth_error", str(status)) from None
            if status == 404:
                raise JudgeError("not_found", f"404 (model {self.config.request_model!r}?)") from None
            raise Unsupported(f"{status} {text}") from None
        except (openai.APITimeoutError, httpx.TimeoutException):
            raise _Retryable("timeout", f"no reply within {budget_s:.0f} s", load="timeout") from None
        except (openai.APIConnectionError, httpx.TransportError) as exc:
            raise _Retryable("connection_error", type(exc).__name__) from None
        try:
            body = json.loads(b"".join(chunks))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise _Retryable("bad_response", "reply body is not JSON") from None
        if not isinstance(body, dict):
            raise _Retryable("bad_response", "reply body is not a JSON object")
        return body


def _retry_after(response: httpx.Response | None) -> float | None:
    if response is None:
        return None
    return parse_retry_after(response.headers.get("retry-after"))


def _error_text(exc: openai.APIStatusError) -> str:
    try:
        return exc.response.text[:500]
    except (httpx.ResponseNotRead, AttributeError):
        return str(exc)[:500]


def _token_counts(body: dict[str, Any]) -> tuple[int, int]:
    usage = body.get("usage") or {}
    try:
        return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    except (TypeError, ValueError):
        return 0, 0
