"""Settings of SelfCheck consistency (metric `selfcheck`). Section `scorer.selfcheck`.

Kept apart from the metric so that reading the configuration never imports the openai SDK.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ragpulse.core.settings import ConfigError, key, require_at_least
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig


@dataclass
class SampleGeneratorConfig:
    # The model that answers again (usually the app's own model).
    model: str
    # The OpenAI-compatible endpoint; unset: api.openai.com.
    base_url: str | None = None
    # Unset: $OPENAI_API_KEY; a local server usually takes any.
    api_key: str | None = field(default_factory=lambda: os.environ.get("OPENAI_API_KEY"), repr=False)
    # Answers drawn per record, each with its own seed.
    n: int = 5
    # Sampling temperature (SelfCheckGPT: 1.0); above 0, or every sample is the same answer.
    temperature: float = 1.0
    # The longest one request may take, first byte to last; each request's own deadline is set from
    # the endpoint's observed latency below it (as the openai judge's).
    timeout_s: float = 600.0
    # Retries on 429, 5xx and timeouts, with exponential backoff.
    max_retries: int = 2
    # Requests in flight at once: the ceiling of what adaptive_concurrency learns (as the openai judge's).
    max_concurrency: int = 4
    # Learn the endpoint's capacity between 1 and max_concurrency; off: always max_concurrency.
    adaptive_concurrency: bool = True

    def validate(self, where: str) -> None:
        if not self.model.strip():
            raise ConfigError(f"{key(where, 'model')}: a model name is required")
        if self.base_url is not None and not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{key(where, 'base_url')}: expected an http(s) URL, got {self.base_url!r}")
        if not 0.0 < self.temperature <= 2.0:
            raise ConfigError(f"{key(where, 'temperature')}: expected above 0 and at most 2 (every sample at 0 "
                              f"is the same answer), got {self.temperature}")
        require_at_least(key(where, "n"), self.n, 1)
        require_at_least(key(where, "max_retries"), self.max_retries, 0)
        require_at_least(key(where, "max_concurrency"), self.max_concurrency, 1)
        if self.timeout_s <= 0:
            raise ConfigError(f"{key(where, 'timeout_s')}: expected > 0, got {self.timeout_s}")

    def endpoint(self) -> OpenAIJudgeConfig:
        """The request policies (retries, breaker, rate limits) of the openai judge, for this endpoint."""
        return OpenAIJudgeConfig(model=self.model, base_url=self.base_url, api_key=self.api_key,
                                 temperature=self.temperature, timeout_s=self.timeout_s, max_retries=self.max_retries,
                                 max_concurrency=self.max_concurrency, adaptive_concurrency=self.adaptive_concurrency)


@dataclass
class SelfCheckConfig:
    # Where samples come from for a record whose span carries none (rag.samples): an
    # OpenAI-compatible model asked the record's question with its contexts. Unset: only spans
    # with rag.samples are checked; the others count no_samples.
    generator: SampleGeneratorConfig | None = None
    # Fewer samples than this (from the span or the generator) is a counted failure (too_few_samples).
    min_samples: int = 2

    def validate(self, where: str) -> None:
        require_at_least(key(where, "min_samples"), self.min_samples, 1)
        if self.generator is not None and self.generator.n < self.min_samples:
            raise ConfigError(f"{key(where, 'generator.n')} ({self.generator.n}) is below "
                              f"{key(where, 'min_samples')} ({self.min_samples})")
