"""The learned-combiner experiment on the local judge: per-statement features, the small network
that weighs them, and a judge whose verdicts come from it (bench/train_local_judge.py fits it;
bench/quality_peer.py --combiner PATH measures it). Not the shipped judge: on RAGTruth dev it
ranked worse than the hand-made verdict (bench/RESULTS.md).

Features of a statement (LexicalJudge.alignments gives what they are made of): the hand-made
verdict itself, coverage against all contexts and against the evidence window, decisive numbers
and names, the evidence's cosine, whether neighbouring words of the statement also stand together
in one context sentence (a claim recombined from scattered words has them apart), a negation that
the evidence lacks or has alone, how many words the contexts lack outright, and length.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragpulse.scorer.judge.base import RecordText, Usage, Verdict
from ragpulse.scorer.judge.local import LexicalJudge
from ragpulse.scorer.judge.local.judge import Alignment, found_share, support
from ragpulse.scorer.judge.local.text import is_decisive, name_tokens, normalise

FEATURES = (
    "support",  # the judge's hand-made verdict
    "cover_all",  # share of words the contexts contain (synonyms count partly)
    "cover_near",  # the same against the evidence sentence and its neighbours
    "numbers_all",  # share of numbers the contexts contain (1 when none)
    "numbers_near",
    "has_numbers",
    "names_all",  # share of names the contexts contain (1 when none)
    "names_near",
    "has_names",
    "closeness",  # cosine of the statement with its evidence sentence
    "pairs_together",  # share of neighbouring word pairs that one context sentence holds both of
    "pairs_near",  # the same within the evidence window
    "negation_differs",  # the statement negates and its evidence does not, or the reverse
    "missing",  # log(1 + words the contexts lack with no synonym credit)
    "length",  # log(1 + content tokens)
)

# Negation in either language; the judge's Japanese tokens (kanji/katakana bigrams) never see the
# all-hiragana endings ない/ません/ず.
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot)\b|n't\b"
    r"|(?:ない|なかった|ません|ず[、。に]|ではなく|じゃない)",
    re.IGNORECASE,
)


def negated(text: str) -> bool:
    return bool(_NEGATION.search(normalise(text)))


def sentence_index(sentence_tokens: list[frozenset[str]]) -> dict[str, frozenset[int]]:
    """Token -> the numbers of the context sentences that contain it."""
    index: dict[str, set[int]] = {}
    for i, tokens in enumerate(sentence_tokens):
        for tok in tokens:
            index.setdefault(tok, set()).add(i)
    return {tok: frozenset(ids) for tok, ids in index.items()}


def pairs_together(tokens: list[str], where: Mapping[str, frozenset[int]], among: range | None = None) -> float:
    """Share of the statement's neighbouring content-token pairs (both found in the contexts) that
    one context sentence (among the given ones, any for None) holds together; 1 when no such pair."""
    found = [t for t in dict.fromkeys(tokens) if t in where]
    pairs = list(zip(found, found[1:], strict=False))
    if not pairs:
        return 1.0
    allowed = None if among is None else frozenset(among)
    return sum(bool(where[a] & where[b] if allowed is None else where[a] & where[b] & allowed)
               for a, b in pairs) / len(pairs)


def features(a: Alignment, where: Mapping[str, frozenset[int]]) -> np.ndarray:
    """One row in FEATURES order."""
    words = [t for t in a.tokens if not is_decisive(t)]
    numbers = [t for t in a.tokens if is_decisive(t)]
    names = name_tokens(a.statement)
    ctx = a.context.tokens
    values = {
        "support": support(a),
        "cover_all": found_share(words, ctx, a.credit_anywhere),
        "cover_near": found_share(words, a.near, a.credit_near),
        "numbers_all": found_share(numbers, ctx, {}),
        "numbers_near": found_share(numbers, a.near, {}),
        "has_numbers": float(bool(numbers)),
        "names_all": found_share(names, ctx, {}),
        "names_near": found_share(names, a.near, {}),
        "has_names": float(bool(names)),
        "closeness": a.closeness,
        "pairs_together": pairs_together(a.tokens, where),
        "pairs_near": pairs_together(a.tokens, where, a.window),
        "negation_differs": float(negated(a.statement) != negated(a.context.sentences[a.best])),
        "missing": math.log1p(sum(1 for t in a.tokens if t not in ctx and t not in a.credit_anywhere)),
        "length": math.log1p(len(a.tokens)),
    }
    return np.array([values[name] for name in FEATURES], dtype=np.float64)


def feature_rows(alignments: list[Alignment]) -> np.ndarray:
    if not alignments:
        return np.zeros((0, len(FEATURES)))
    where = sentence_index(alignments[0].context.sentence_tokens)
    return np.stack([features(a, where) for a in alignments])


@dataclass(frozen=True)
class Network:
    """Standardised inputs, tanh hidden layers (none: logistic regression), a logistic output."""

    mean: np.ndarray
    scale: np.ndarray
    layers: tuple[tuple[np.ndarray, np.ndarray], ...]

    def support(self, rows: np.ndarray) -> np.ndarray:
        x = (rows - self.mean) / self.scale
        for i, (w, b) in enumerate(self.layers):
            x = x @ w + b
            if i < len(self.layers) - 1:
                x = np.tanh(x)
        return 1.0 / (1.0 + np.exp(-x[:, 0]))


def network(data: dict) -> Network:
    if tuple(data["features"]) != FEATURES:
        raise ValueError(f"weights are for features {data['features']}, not {list(FEATURES)}")
    layers = tuple((np.array(layer["w"]), np.array(layer["b"])) for layer in data["layers"])
    return Network(np.array(data["mean"]), np.array(data["scale"]), layers)


def load_network(path: Path) -> Network:
    return network(json.loads(path.read_text(encoding="utf-8")))


class CombinedJudge(LexicalJudge):
    """The local judge with each statement's support from the network; same evidence sentences."""

    def __init__(self, net: Network) -> None:
        super().__init__()
        self._net = net

    def verify(self, rec: RecordText, statements: list[str], usage: Usage) -> list[Verdict]:
        aligned = self.alignments(rec, statements, usage)
        if not aligned:
            return []
        values = self._net.support(feature_rows(aligned)).tolist()
        return [Verdict(v, a.evidence) for v, a in zip(values, aligned, strict=True)]
