"""Sampled answers for SelfCheck consistency, from any OpenAI-compatible endpoint: the record's
question asked again with its contexts, once per sample, each at the configured temperature with
its own seed. Requests go through the judge's request policies (transport.py: budget, breaker, rate
limits, retries); a request that fails raises JudgeError with the transport's reason."""

from __future__ import annotations

from ragpulse.scorer.judge.base import JudgeError, RecordText, Usage
from ragpulse.scorer.judge.openai import prompts
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
from ragpulse.scorer.judge.openai.transport import Transport, Unsupported

# A sampled answer needs no more than a short answer's room.
MAX_TOKENS = 400


class SampleGenerator:
    def __init__(self, config: OpenAIJudgeConfig, n: int, client: object | None = None) -> None:
        self.config = config
        self.n = n
        self._transport = Transport(config, client)  # type: ignore[arg-type]

    def samples(self, rec: RecordText, usage: Usage) -> list[str]:
        messages = prompts.sample_answer(rec.question, rec.contexts)
        estimate = sum(len(m["content"]) for m in messages) // 3 + MAX_TOKENS
        out = []
        for i in range(self.n):
            kwargs = {"model": self.config.request_model, "messages": messages,
                      "temperature": self.config.temperature, "max_tokens": MAX_TOKENS}
            if self.config.seed is not None:
                kwargs["seed"] = self.config.seed + i
            try:
                body = self._transport.call(self._transport.client.chat.completions, kwargs, estimate, usage)
            except Unsupported as exc:
                raise JudgeError("bad_request", exc.detail[:300]) from None
            try:
                text = body["choices"][0]["message"]["content"] or ""
            except (KeyError, IndexError, TypeError):
                raise JudgeError("bad_response", "no choices[0].message.content in the reply") from None
            out.append(text)
        return out
