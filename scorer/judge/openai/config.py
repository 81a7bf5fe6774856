"""Settings of the `openai` judge, its price table included: typed, validated at start. Kept apart
from the judge so that reading the configuration never imports the openai SDK (seconds of start-up
for every scorer)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ragpulse.core.settings import ConfigError, key
from ragpulse.scorer.judge.budget import WINDOW_SECONDS

_MODES = ("auto", "on", "off")
_FORMATS = ("auto", "json_schema", "json_object")


@dataclass(frozen=True)
class Price:
    """USD per one million tokens."""

    prompt_per_1m: float
    completion_per_1m: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt_per_1m + completion_tokens * self.completion_per_1m) / 1e6


# Published list prices at the time of writing; override them with your contract's prices.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
}


@dataclass
class OpenAIJudgeConfig:
    # The judge model's name (for Azure, the model behind the deployment: it picks the price).
    model: str
    # The OpenAI-compatible endpoint; unset: api.openai.com; for Azure, the resource endpoint.
    base_url: str | None = None
    # Unset: $OPENAI_API_KEY; a local server usually takes any key.
    api_key: str | None = field(default_factory=lambda: os.environ.get("OPENAI_API_KEY"), repr=False)
    # Azure OpenAI: the deployment name, with azure_api_version.
    azure_deployment: str | None = None
    # Azure OpenAI: the API version, with azure_deployment.
    azure_api_version: str | None = None
    # Embeddings for answer relevancy from the endpoint; unset: the offline model embeds.
    embedding_model: str | None = None
    # 0 with a fixed seed: the same record scores the same on a re-run, as far as the endpoint allows.
    temperature: float = 0.0
    # Sent with every request where the endpoint takes one; unset: none sent.
    seed: int | None = 0
    # The longest one request may take, first byte to last. Each request's own deadline is set below
    # it from the endpoint's observed latency for requests of its size (scorer/judge/openai/latency.py):
    # a slow local model gets the minutes it needs, a hung request to a fast API is cut in seconds.
    timeout_s: float = 600.0
    # Retries on 429, 5xx and timeouts, with exponential backoff and jitter that honours Retry-After.
    max_retries: int = 4
    # Backoff scale: retry n waits a random time up to backoff_base_s * 2^n (at most backoff_max_s).
    backoff_base_s: float = 0.5
    # Longest wait between two retries, a server's Retry-After included.
    backoff_max_s: float = 30.0
    # Requests per minute, shared by all scoring in the process (on Kafka, by the scorer group);
    # unset: no limit.
    rpm: float | None = None
    # Tokens per minute, shared by all scoring in the process (on Kafka, by the scorer group);
    # unset: no limit.
    tpm: float | None = None
    # Requests in flight at once at most: the ceiling of what adaptive_concurrency learns.
    max_concurrency: int = 4
    # Learn how many requests the endpoint serves at once without queueing, between 1 and
    # max_concurrency (latency rising, timeouts, 429 and 503 lower it; scorer/judge/openai/concurrency.py);
    # requests over it wait in ragpulse, not in the endpoint's queue. Off: always max_concurrency.
    adaptive_concurrency: bool = True
    # USD per 1M prompt and completion tokens by model, for the cost counter and the budget.
    prices: dict[str, Price] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    # Spend per budget_window (on Kafka, of the whole scorer group); unset: no budget.
    budget_usd: float | None = None
    # The budget's window: hour or day.
    budget_window: str = "day"
    # Spread the budget over its window: score a share of the records (consistent by trace id) and
    # scale their weights, instead of scoring everything until the money runs out (scorer/estimate/pacing.py).
    budget_pacing: bool = True
    # Verdicts as the probability of "true" where the endpoint returns logprobs (auto: ask, and stop
    # asking if the endpoint rejects the option; on; off).
    use_logprobs: str = "auto"
    # Structured output: auto (json_schema, falling back to json_object if rejected), json_schema, json_object.
    response_format: str = "auto"
    # Questions generated per answer for answer relevancy (set from scorer.answer_relevancy_questions).
    n_questions: int = 3
    # One call reads the answer for both faithfulness (claims) and answer relevancy (questions).
    combine_answer_calls: bool = True
    # Turns that show the model its malformed reply and ask again before the failure counts.
    max_repairs: int = 1
    # Replies remembered by content hash: a record scored twice costs nothing and scores the same.
    cache_size: int = 4096
    # Consecutive failures that open the circuit breaker (scoring pauses, records wait).
    breaker_failures: int = 5
    # How long the breaker stays open before one request tries the endpoint again.
    breaker_cooldown_s: float = 10.0
    # How long one request waits for an open breaker before it fails as circuit_open (the record
    # then waits and is tried again, never dropped).
    breaker_max_wait_s: float = 600.0

    def validate(self, where: str) -> None:
        def need(ok: bool, name: str, what: str) -> None:
            if not ok:
                raise ConfigError(f"{key(where, name)}: {what}, got {getattr(self, name)!r}")

        need(bool(self.model and self.model.strip()), "model", "a model name is required")
        need(
            self.base_url is None or self.base_url.startswith(("http://", "https://")),
            "base_url",
            "expected an http(s) URL",
        )
        # OpenAI itself and Azure need a key; a local server usually takes any.
        need(bool(self.api_key) or self._is_custom_endpoint(), "api_key", "set it or OPENAI_API_KEY")
        need(
            (self.azure_deployment is None) == (self.azure_api_version is None),
            "azure_api_version",
            "azure_deployment and azure_api_version go together",
        )
        need(
            self.azure_deployment is None or self.base_url is not None, "base_url", "Azure needs the resource endpoint"
        )
        need(0.0 <= self.temperature <= 2.0, "temperature", "expected 0..2")
        need(self.timeout_s > 0, "timeout_s", "expected > 0")
        need(self.max_retries >= 0, "max_retries", "expected >= 0")
        need(0 < self.backoff_base_s <= self.backoff_max_s, "backoff_base_s", "expected 0 < base <= max")
        need(self.rpm is None or self.rpm > 0, "rpm", "expected > 0 or unset")
        need(self.tpm is None or self.tpm > 0, "tpm", "expected > 0 or unset")
        need(self.max_concurrency >= 1, "max_concurrency", "expected >= 1")
        need(self.budget_usd is None or self.budget_usd > 0, "budget_usd", "expected > 0 or unset")
        need(self.budget_window in WINDOW_SECONDS, "budget_window", f"expected one of {sorted(WINDOW_SECONDS)}")
        need(
            self.budget_usd is None or self.model in self.prices,
            "prices",
            f"a budget needs a price for model {self.model!r}",
        )
        need(
            all(p.prompt_per_1m >= 0 and p.completion_per_1m >= 0 for p in self.prices.values()),
            "prices",
            "expected non-negative USD per 1M tokens",
        )
        need(self.use_logprobs in _MODES, "use_logprobs", f"expected one of {_MODES}")
        need(self.response_format in _FORMATS, "response_format", f"expected one of {_FORMATS}")
        need(1 <= self.n_questions <= 10, "n_questions", "expected 1..10")
        need(self.max_repairs >= 0, "max_repairs", "expected >= 0")
        need(self.cache_size >= 0, "cache_size", "expected >= 0")
        need(self.breaker_failures >= 1, "breaker_failures", "expected >= 1")
        need(self.breaker_cooldown_s > 0, "breaker_cooldown_s", "expected > 0")
        need(self.breaker_max_wait_s > 0, "breaker_max_wait_s", "expected > 0")

    @property
    def request_model(self) -> str:
        """The model a request names: Azure routes by deployment, the model name is then informational."""
        return self.azure_deployment or self.model

    def _is_custom_endpoint(self) -> bool:
        return self.base_url is not None and self.azure_deployment is None
