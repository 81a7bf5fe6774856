"""The learned offline judge: the lexical judge's structure, with a cross-encoder's answers to the two
questions a lexical signal cannot answer (cross_encoder.py).

- faithfulness: each statement is checked against the evidence windows the lexical aligner proposes
  (its closest sentence, the one holding its numbers and names, and the next closest ones, each with
  its neighbours); the wording's verdict is the cross-encoder's best support among them, times the
  checks that already work (numbers, names, structured facts: judge.decisive);
- context relevancy: a sentence is needed as far as it answers the question;
- answer relevancy: a part of the answer is on the question as far as it answers it; refusals,
  restatements and descriptions of the documents are found as before (relevance.py).
Statements, evidence, slices and embeddings are the lexical judge's.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np

from ragpulse.scorer.judge.base import JudgeError, RecordText, Usage, Verdict
from ragpulse.scorer.judge.local.cross_encoder import CrossEncoder
from ragpulse.scorer.judge.local.judge import Alignment, LexicalJudge, decisive, wording_verdict

# Evidence windows checked per statement besides the aligner's own: the next closest sentence by
# embedding, with its neighbours. Each window is one forward pass of up to 160 tokens: the cost of
# faithfulness grows with it (bench/RESULTS.md, records/s).
EXTRA_WINDOWS = 1
# Context sentences read by the encoder per record, the closest to the question by embedding; the
# others count as not needed. Bounds the cost of a record (a WikiEval record has 36 context
# sentences, a long retrieval thousands); set for speed, not fitted to a benchmark.
MAX_SENTENCES = 16
# Statements (and answer parts) the encoder reads per record: about 50 ms of one core each. A longer
# answer (a hostile one had 1,140) is a counted failure, never minutes of one scorer thread; the
# lexical judge has no such bound.
MAX_STATEMENTS = 128
# A part answers the question when the encoder says so more likely than not (a probability: no
# threshold was fitted to a benchmark).
ANSWERS_AT = 0.5


class LearnedJudge(LexicalJudge):
    name = "learned"

    def __init__(self, model_root: Path | None = None, encoder_root: Path | None = None) -> None:
        super().__init__(model_root)
        self._encoder = CrossEncoder(encoder_root)
        self.model = f"{self._encoder.model_id}+{self.model}"

    def verify(self, rec: RecordText, statements: list[str], usage: Usage) -> list[Verdict]:
        _bounded(statements, "statements")
        aligned = self.alignments(rec, statements, usage)
        if not aligned:
            return []
        start = time.perf_counter()
        ctx = aligned[0].context
        closest = np.argsort(-(self.embed(statements, usage) @ ctx.vectors.T), axis=1)[:, :EXTRA_WINDOWS + 1]
        candidates = [_windows(a, row.tolist()) for a, row in zip(aligned, closest, strict=True)]
        pairs = [(_text(ctx.sentences, w), a.statement) for a, ws in zip(aligned, candidates, strict=True) for w in ws]
        probs = iter(self._encoder.support(pairs).tolist())
        verdicts = []
        for a, windows in zip(aligned, candidates, strict=True):
            scored = [(next(probs), w) for w in windows]
            if not a.tokens:
                verdicts.append(Verdict(0.0, a.evidence))
                continue
            best, window = max(scored, key=lambda s: s[0])
            shown = dataclasses.replace(a, window=window)
            # The encoder alone ranked RAGTruth dev's hallucinated answers worse than the lexical
            # coverage (AUC 0.77 against 0.88; QA 0.59): the wording's verdict is the geometric mean
            # of both, and the numbers, names and facts decide as in the lexical judge.
            wording = math.sqrt(float(best) * wording_verdict(a))
            verdicts.append(Verdict(wording * decisive(a), shown.evidence))
        usage.calls += 1
        usage.seconds += time.perf_counter() - start
        return verdicts

    def relevant_sentences(self, rec: RecordText, sentences: list[str], usage: Usage) -> list[float]:
        if not sentences:
            return []
        chosen = list(range(len(sentences)))
        if len(sentences) > MAX_SENTENCES:
            sims = self.embed(sentences, usage) @ self.embed([rec.question], usage)[0]
            chosen = np.argsort(-sims)[:MAX_SENTENCES].tolist()
        start = time.perf_counter()
        probs = self._encoder.answers([(rec.question, sentences[i]) for i in chosen])
        usage.calls += 1
        usage.seconds += time.perf_counter() - start
        needed = [0.0] * len(sentences)
        for i, p in zip(chosen, probs.tolist(), strict=True):
            needed[i] = float(p)
        return needed

    def _topical(self, rec: RecordText, parts: list[str], said: dict[str, frozenset[str]],
                 subject: frozenset[str], usage: Usage) -> dict[str, bool]:
        if not parts:
            return {}
        _bounded(parts, "answer parts")
        lexical = super()._topical(rec, parts, said, subject, usage)
        start = time.perf_counter()
        probs = self._encoder.answers([(rec.question, p) for p in parts])
        usage.calls += 1
        usage.seconds += time.perf_counter() - start
        # A part the lexical cues miss (its subject left implied, other words) is on the question
        # when the encoder says it answers it; on its own, the encoder's probabilities for
        # generated answers ran low (WikiEval dev agreement 0.48 against the lexical 0.84).
        return {p: lexical[p] or bool(v >= ANSWERS_AT) for p, v in zip(parts, probs.tolist(), strict=True)}


def _bounded(texts: list[str], what: str) -> None:
    if len(texts) > MAX_STATEMENTS:
        raise JudgeError("too_many_statements",
                         f"{len(texts)} {what}, more than the learned judge reads ({MAX_STATEMENTS}); "
                         "the lexical judge has no bound")


def _windows(a: Alignment, closest: list[int]) -> list[range]:
    """The aligner's window first, then one around each of the next closest sentences."""
    n = len(a.context.sentences)
    out = [a.window]
    for best in closest:
        w = range(max(0, best - 1), min(n, best + 2))
        if w not in out:
            out.append(w)
    return out[:EXTRA_WINDOWS + 1]


def _text(sentences: list[str], window: range) -> str:
    """The window's sentences as one passage; Japanese sentences join without a space, as in the
    passages the encoder learned from."""
    out = ""
    for s in sentences[window.start:window.stop]:
        out += s if not out or out.endswith(("。", "！", "？")) else " " + s
    return out
