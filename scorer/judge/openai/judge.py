"""The `openai` judge: any OpenAI-compatible chat endpoint (OpenAI, Azure OpenAI, vLLM, Ollama,
llama.cpp server) answers the primitive questions of the metrics.

Three calls per record cover all three metrics: one reads the answer (its claims, the questions it
answers, whether it is noncommittal), one checks all claims against the contexts, one picks the
context sentences the question needs. The prompts are in prompts.py, reading the replies in
replies.py, the request policies (budget, breaker, rate limits, retries) in transport.py; this
module asks, repairs a rejected reply, adapts the request to what the endpoint supports, remembers
answers, and rejects verdicts that call the canary claim (canary.py) supported.

Record text is sensitive: it is never logged above debug level.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import openai

from ragpulse.scorer.bounded_cache import BoundedCache
from ragpulse.scorer.judge.base import GeneratedQuestions, JudgeError, RecordText, Usage
from ragpulse.scorer.judge.openai import prompts
from ragpulse.scorer.judge.openai.canary import canary
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
from ragpulse.scorer.judge.openai.prompts import Prompt, as_data
from ragpulse.scorer.judge.openai.replies import (
    InvalidReply,
    Reply,
    check_schema,
    parse_json_reply,
    verdict_ids,
    verdict_probabilities,
)
from ragpulse.scorer.judge.openai.transport import Transport, Unsupported

log = logging.getLogger(__name__)

# auto: the strongest structured-output form the endpoint accepts, stepping down on a 4xx that
# names it.
_FORMAT_FALLBACK = {"json_schema": "json_object_schema", "json_object_schema": "json_object"}
_ENDPOINT_FEATURES: dict[tuple[str | None, str], dict[str, Any]] = {}
# Temperature of repeated samples (aspect critique's votes): at 0 every vote would be the same.
SAMPLE_TEMPERATURE = 0.7


class Embedder(Protocol):
    def embed(self, texts: list[str], usage: Usage) -> np.ndarray: ...


def _content_key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


class OpenAIJudge:
    name = "openai"

    def __init__(
        self,
        config: OpenAIJudgeConfig,
        fallback_embedder: Embedder | None = None,
        client: openai.OpenAI | None = None,
    ) -> None:
        self.config = config
        self.model = config.model
        self._fallback_embedder = fallback_embedder
        self._transport = Transport(config, client)
        # Read by the scorer: the spending budget (its pacer), and the counters of its Prometheus
        # families (requests by outcome, failures by reason), which the transport keeps.
        self.budget = self._transport.budget
        self.requests = self._transport.requests
        self.failures = self._transport.failures
        self.concurrency = self._transport.concurrency
        # A record scored twice costs nothing and gets the same number.
        self._cache: BoundedCache[str, Any] = BoundedCache(config.cache_size)
        # What the endpoint turned out to support, learnt once per process and endpoint.
        self._endpoint = _ENDPOINT_FEATURES.setdefault(
            (config.base_url, config.request_model),
            {
                "format": "json_schema" if config.response_format == "auto" else config.response_format,
                "logprobs": config.use_logprobs != "off",
            },
        )

    # --- the primitive questions -----------------------------------------------------------------

    def statements(self, rec: RecordText, usage: Usage) -> list[str]:
        parts = ("statements", "questions") if self.config.combine_answer_calls else ("statements",)
        read = self._read_answer(rec, parts, self.config.n_questions, usage)
        return [s.strip() for s in read["statements"] if s.strip()]

    def questions(self, rec: RecordText, n: int, usage: Usage) -> GeneratedQuestions:
        if self.config.combine_answer_calls and n == self.config.n_questions:
            read = self._read_answer(rec, ("statements", "questions"), n, usage)
        else:
            read = self._read_answer(rec, ("questions",), n, usage)
        qs = [q.strip() for q in read["questions"] if q.strip()]
        return GeneratedQuestions(questions=qs[:n], noncommittal=bool(read["noncommittal"]))

    def verify(self, rec: RecordText, statements: list[str], usage: Usage) -> list[float]:
        prompt = prompts.verify(rec.contexts, [*statements, canary(rec.contexts, statements)])
        n = len(statements) + 1

        def ask() -> list[float]:
            obj, reply = self._ask(prompt, usage, check=lambda o: verdict_ids(o, n))
            hard = [bool(v["supported"]) for v in obj["verdicts"]]
            support = [0.0] * n
            for i, p in zip(verdict_ids(obj, n), verdict_probabilities(reply, hard), strict=True):
                support[i] = p
            return support

        support = self._cached((prompt.task, prompt.system, prompt.user), ask)
        if support[-1] >= 0.5:
            self.failures["canary_failed"] += 1
            raise JudgeError("canary_failed", "the judge called a made-up claim that no context states supported")
        return support[:-1]

    def relevant_sentences(self, rec: RecordText, sentences: list[str], usage: Usage) -> list[float]:
        prompt = prompts.relevant(rec.question, sentences)

        def ask() -> list[float]:
            obj, _ = self._ask(prompt, usage)
            chosen = set(obj["relevant"])
            return [1.0 if i + 1 in chosen else 0.0 for i in range(len(sentences))]

        return self._cached((prompt.task, prompt.system, prompt.user), ask)

    def useful_contexts(self, rec: RecordText, usage: Usage) -> list[float]:
        prompt = prompts.useful_contexts(rec.question, rec.contexts, rec.answer)
        n = len(rec.contexts)

        def ask() -> list[float]:
            obj, _ = self._ask(prompt, usage, check=lambda o: verdict_ids(o, n))
            useful = [0.0] * n
            for i, verdict in zip(verdict_ids(obj, n), obj["verdicts"], strict=True):
                useful[i] = 1.0 if verdict["useful"] else 0.0
            return useful

        return self._cached((prompt.task, prompt.system, prompt.user), ask)

    def critique(self, rec: RecordText, criterion: str, samples: int, usage: Usage) -> list[bool]:
        """One call per sample. More than one sample is drawn at SAMPLE_TEMPERATURE at least, each
        with its own seed, so that the votes can differ and the majority means something."""
        base = prompts.critique(rec.question, rec.answer, criterion)
        votes = []
        for i in range(samples):
            prompt = base if samples == 1 else dataclasses.replace(
                base, temperature=max(self.config.temperature, SAMPLE_TEMPERATURE), seed_offset=i)
            key = (prompt.task, prompt.system, prompt.user, prompt.temperature, prompt.seed_offset)
            votes.append(self._cached(key, lambda p=prompt: bool(self._ask(p, usage)[0]["verdict"])))
        return votes

    def embed(self, texts: list[str], usage: Usage) -> np.ndarray:
        if self.config.embedding_model is None:
            if self._fallback_embedder is None:
                raise JudgeError("no_embedder", "set embedding_model or pass a fallback embedder")
            # Local work: its time counts, but `calls` stays the count of endpoint requests.
            local = Usage()
            vectors = self._fallback_embedder.embed(texts, local)
            usage.seconds += local.seconds
            return vectors

        def ask() -> np.ndarray:
            estimate = sum(len(t) for t in texts) // 3 + 1
            body = self._transport.call(
                self._transport.client.embeddings,
                {"model": self.config.embedding_model, "input": texts},
                estimate,
                usage,
            )
            try:
                rows = sorted(body["data"], key=lambda d: d["index"])
                vectors = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
            except (KeyError, TypeError, ValueError) as exc:
                raise JudgeError("bad_response", f"embeddings: {exc}") from None
            if vectors.shape[0] != len(texts) or not np.isfinite(vectors).all():
                raise JudgeError("bad_response", "embeddings: wrong count or non-finite values")
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            return vectors / np.where(norms == 0, 1.0, norms)

        return self._cached(("embed", self.config.embedding_model, texts), ask)

    # --- asking ----------------------------------------------------------------------------------

    def _read_answer(self, rec: RecordText, parts: tuple[str, ...], n: int, usage: Usage) -> dict[str, Any]:
        """Claims and/or generated questions of the answer; one call serves both metrics of a
        record (the memo is the record's). Its usage is charged to the metric that asked first."""
        memo_key = f"openai.read_answer:{','.join(parts)}:{n}"
        memo = rec.memo.get(memo_key)
        if isinstance(memo, dict):
            return memo
        prompt = prompts.read_answer(rec.answer, parts, n)
        result = self._cached((prompt.task, prompt.system, prompt.user), lambda: self._ask(prompt, usage)[0])
        rec.memo[memo_key] = result
        return result

    def _cached(self, parts: tuple[object, ...], compute: Callable[[], Any]) -> Any:
        key = _content_key(self.config.request_model, self.config.temperature, self.config.seed, *parts)
        hit = self._cache.get(key)
        if hit is not None:
            self.requests["cache_hit"] += 1
            return hit
        value = compute()
        self._cache.put(key, value)
        return value

    def _ask(
        self, prompt: Prompt, usage: Usage, check: Callable[[dict[str, Any]], object] = lambda obj: None
    ) -> tuple[dict[str, Any], Reply]:
        """One validated JSON answer; a reply that does not match the schema, or that `check`
        rejects (InvalidReply), gets up to `max_repairs` more turns that show the model its error."""
        messages: list[dict[str, str]] = [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": as_data(prompt.user)},
        ]
        for repair in range(self.config.max_repairs + 1):
            reply = self._chat(prompt, messages, usage)
            try:
                obj = parse_json_reply(reply.text)
                check_schema(obj, prompt.schema)
                check(obj)
                return obj, reply
            except InvalidReply as exc:
                log.debug("judge %s: reply rejected (%s)", prompt.task, exc)
                if repair == self.config.max_repairs:
                    self.failures["malformed_output"] += 1
                    raise JudgeError("malformed_output", f"{prompt.task}: {exc}") from None
                messages = [
                    *messages[:2],
                    {"role": "assistant", "content": reply.text[:4000]},
                    {"role": "user", "content": prompts.repair(str(exc))},
                ]
        raise AssertionError("unreachable")

    def _chat(self, prompt: Prompt, messages: list[dict[str, str]], usage: Usage) -> Reply:
        while True:
            kwargs: dict[str, Any] = {
                "model": self.config.request_model,
                "messages": messages,
                "temperature": self.config.temperature if prompt.temperature is None else prompt.temperature,
                # max_tokens, not max_completion_tokens: llama.cpp's server ignores the latter.
                "max_tokens": prompt.max_tokens,
            }
            if self.config.seed is not None:
                kwargs["seed"] = self.config.seed + prompt.seed_offset
            if self._endpoint["format"] == "json_schema":
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": prompt.task, "schema": prompt.schema, "strict": True},
                }
            elif self._endpoint["format"] == "json_object_schema":
                # JSON mode plus the schema as llama.cpp's and vLLM's servers take it (a grammar).
                kwargs["response_format"] = {"type": "json_object", "schema": prompt.schema}
            else:
                kwargs["response_format"] = {"type": "json_object"}
            if self._endpoint["logprobs"]:
                kwargs["logprobs"], kwargs["top_logprobs"] = True, 5
            estimate = len(as_data(messages)) // 3 + prompt.max_tokens
            try:
                body = self._transport.call(self._transport.client.chat.completions, kwargs, estimate, usage)
            except Unsupported as exc:
                if not self._downgrade(exc.detail):
                    self.failures["bad_request"] += 1
                    raise JudgeError("bad_request", exc.detail[:300]) from None
                continue
            try:
                choice = body["choices"][0]
                text = choice["message"]["content"] or ""
                logprobs = (choice.get("logprobs") or {}).get("content")
            except (KeyError, IndexError, TypeError, AttributeError):
                self.failures["bad_response"] += 1
                raise JudgeError("bad_response", "no choices[0].message.content in the reply") from None
            return Reply(text, logprobs if isinstance(logprobs, list) else None)

    def _downgrade(self, detail: str) -> bool:
        """Drop an optional request feature the endpoint rejected (400); False if none is left."""
        lowered = detail.lower()
        if (
            self.config.response_format == "auto"
            and self._endpoint["format"] in _FORMAT_FALLBACK
            and ("response_format" in lowered or "schema" in lowered)
        ):
            self._endpoint["format"] = _FORMAT_FALLBACK[self._endpoint["format"]]
            log.warning("judge endpoint rejected the response format; now using %s", self._endpoint["format"])
            return True
        if self.config.use_logprobs == "auto" and self._endpoint["logprobs"] and "logprob" in lowered:
            self._endpoint["logprobs"] = False
            log.warning("judge endpoint rejected logprobs; using hard verdicts")
            return True
        return False
