"""The `local` judge: offline, no API key, no neural network at run time.

It answers the judge's primitive questions with cheap signals:
- a hybrid embedding: static token embeddings (WordLlama, shipped in the `wordllama` wheel, see
  model.py) concatenated with a hashed bag of content tokens (text.py), so that a
  cosine is a fixed blend of meaning similarity and lexical overlap. The lexical part is what
  makes Japanese work (character bigrams) and what makes numbers and names count;
- lexical coverage: the share of a statement's content tokens that the contexts contain, with
  numbers decisive ("Monday, 30 August" is not supported by "Sunday, 30 July"), checked against
  all contexts and against the statement's closest context sentence and its neighbours (the
  evidence each verdict names); an English word the contexts lack earns partial support from a
  close synonym in them (static word cosine);
- what an answer answers (relevance.py): refusals, descriptions of the documents and
  restatements of the question commit to nothing; a part of the question that asks for a date,
  number, person or place is answered only by an answer that gives one.

It is an approximation of an LLM judge, honestly so: statements are the answer's sentences and
clauses, not rewritten claims; "generated questions" are not generated: each stands either for
the part of the question the answer answers or, for an off-topic part of the answer, for that
part's own text (see `questions`). bench/quality.py and bench/quality_peer.py measure how close it
gets.

Tuned constants (all global, none per record): LEXICAL_WEIGHT, NUMBER_WEIGHT, and STEM_CHARS in
text.py; results are flat around the chosen values (docs/design/local-judge.md, bench/RESULTS.md).
SYNONYM_NONE and SYNONYM_FULL were set from word pairs (below), not fitted to a benchmark.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragpulse.scorer.bounded_cache import BoundedCache
from ragpulse.scorer.judge.base import GeneratedQuestions, JudgeError, RecordText, Usage, Verdict
from ragpulse.scorer.judge.local.model import MODEL_ID, StaticModel, load_static_model
from ragpulse.scorer.judge.local.relevance import (
    answers_nothing,
    answers_part,
    asked,
    question_parts,
    states_silence,
)
from ragpulse.scorer.judge.local.structured import Facts, agreement, facts
from ragpulse.scorer.judge.local.text import (
    claim_content,
    claims,
    content_tokens,
    is_decisive,
    is_noncommittal,
    keep_only,
    latin_words,
    name_tokens,
    new_content,
    normalise,
    text_weight,
    token_spans,
)
from ragpulse.scorer.judge.local.usefulness import usefulness
from ragpulse.scorer.sentences import context_sentences

# Share of the cosine that comes from lexical overlap (the rest from static embeddings).
LEXICAL_WEIGHT = 0.75
# A number counts this many times as much as a word in the lexical part of the embedding.
NUMBER_WEIGHT = 3.0

# Credit near the evidence for a number found only elsewhere in the contexts (`_numbers_elsewhere`).
FUSED_NUMBER = 0.5

# A statement word that the contexts lack earns partial support from its closest context word by
# static-embedding cosine: none at or below SYNONYM_NONE, full from SYNONYM_FULL ("bikes" ~ "bicycles"
# 0.75, "large" ~ "big" 0.74, "shop" ~ "store" 0.65; antonyms and sibling names stay below:
# "open" ~ "closed" 0.45, "Monday" ~ "Tuesday" 0.38, "France" ~ "Germany" 0.26). Set from such
# word pairs, not fitted to a benchmark; RAGTruth dev AUC is flat from 0.3-0.7 to 0.6-0.9.
SYNONYM_NONE = 0.55
SYNONYM_FULL = 0.75

# Where a statement's lexical support turns from "not supported" to "supported", and how sharply
# (`_verdict`). Tuned globally on RAGTruth dev (answer-level AUC), where it is flat: midpoints
# 0.15-0.35 with widths 0.1-0.2 all give 0.879-0.885 overall (QA 0.80-0.82, Summary 0.80-0.82,
# Data2txt 0.85-0.88); the support itself, unstepped, gives 0.875 (QA 0.787).
VERDICT_MIDPOINT = 0.25
VERDICT_SCALE = 0.15

# A part of an answer restates a context sentence that holds this share of its new words, and this
# many characters of them (`_restated`, by text.text_weight): two short English words, a Japanese
# phrase. Written from cases ("Yes, from User Settings at any time." holds all 16 in its source),
# not fitted to a benchmark.
RESTATES_SHARE = 0.4
RESTATES_CHARS = 8
# A part of an answer that says less than this beyond the question's words is a fragment of the part
# before it ("admins only.", 「管理者のみ。」).
FRAGMENT_CHARS = 12

# What a sentence's need keeps when the contexts hold none of the question's words: a passage can
# answer in other words (「入館料は大人1,200円、小中学生600円です」 for 「子ども料金は何歳から」; Japanese
# words get no synonym credit), and must still rank above the same passage padded with noise. The
# smallest of 0.1 / 0.2 / 0.3 that kept that pair of the Japanese dev set (bench/RESULTS.md).
ON_QUESTION_FLOOR = 0.1

HASH_DIM = 1 << 11
# Texts embedded at once: bounds the temporaries of a long record, not the result.
EMBED_BLOCK = 256
# Retrieval returns the same chunks again and again; ~9 KiB a vector keeps this under 20 MiB.
CACHE_SIZE = 2048
# Words recur across records far more than texts do; ~1.2 KB a word (bench/soak_bounds.py) keeps this under 20 MB.
WORD_CACHE_SIZE = 16384
_MEMO_KEY = "local.contexts"


@dataclass(frozen=True)
class ContextIndex:
    """What every metric of one record needs from its contexts, computed once per record."""

    sentences: list[str]
    vectors: np.ndarray  # hybrid embeddings of the sentences, one row each
    tokens: frozenset[str]  # content tokens of all contexts together
    sentence_tokens: list[frozenset[str]]  # content tokens of each sentence
    word_vectors: np.ndarray  # unit static embeddings of the contexts' distinct Latin words
    sentence_words: list[np.ndarray]  # per sentence, the row numbers of its words in word_vectors
    holding: dict[str, list[int]]  # per content token, the sentences that hold it
    facts: Facts  # yes/no facts of structured records (structured.py)


@dataclass(frozen=True)
class Alignment:
    """One statement aligned to the contexts (LexicalJudge.alignments)."""

    statement: str
    tokens: list[str]  # its content tokens
    context: ContextIndex
    best: int  # the number of its closest context sentence: the evidence
    window: range  # the evidence and its neighbouring sentences
    near: frozenset[str]  # content tokens of the window
    credit_anywhere: dict[str, float]  # synonym credit of missing words among all context words
    credit_near: dict[str, float]  # the same among the window's words
    closeness: float  # cosine of the statement with its evidence
    asked: frozenset[str]  # content tokens of the question

    @property
    def evidence(self) -> str:
        """The sentence of the window a reader is shown: the one that holds most of the statement's
        words, the longest among equals. The closest sentence by embedding is often a heading
        ("Oily Skin Causes.", "Typical costs:") whose neighbour holds the rest of what the statement
        says; the verdict weighs the whole window either way."""
        held = set(self.tokens)
        shown = max(self.window, key=lambda i: (len(held & self.context.sentence_tokens[i]),
                                                len(self.context.sentences[i])))
        return self.context.sentences[shown]


class LexicalJudge:
    name = "local"

    def __init__(self, model_root: Path | None = None) -> None:
        self._model: StaticModel = load_static_model(model_root)
        self.model = MODEL_ID
        # Scorer threads may share one judge; the cache is thread-safe.
        self._cache: BoundedCache[str, np.ndarray] = BoundedCache(CACHE_SIZE)
        self._words: BoundedCache[str, np.ndarray] = BoundedCache(WORD_CACHE_SIZE)

    # -- embeddings -------------------------------------------------------------------------

    def embed(self, texts: list[str], usage: Usage) -> np.ndarray:
        start = time.perf_counter()
        unique = list(dict.fromkeys(texts))
        found = {t: v for t in unique if (v := self._cache.get(t)) is not None}
        missing = [t for t in unique if t not in found]
        if missing:
            for text, vec in zip(missing, self._hybrid(missing), strict=True):
                # A copy: a row view would keep its whole block of embeddings alive in the cache.
                self._cache.put(text, vec.copy())
                found[text] = vec
        out = np.stack([found[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)
        usage.calls += 1
        usage.seconds += time.perf_counter() - start
        return out

    @property
    def dim(self) -> int:
        return int(self._model.table.shape[1]) + HASH_DIM

    def _hybrid(self, texts: list[str]) -> np.ndarray:
        # A block of texts at a time, in float32: the temporaries of one long record (3,830 context
        # sentences) took 250 MB at once.
        return np.concatenate([self._hybrid_block(texts[i:i + EMBED_BLOCK])
                               for i in range(0, len(texts), EMBED_BLOCK)])

    def _hybrid_block(self, texts: list[str]) -> np.ndarray:
        dense = _unit_rows(self._model.encode(texts)) * np.float32(np.sqrt(1.0 - LEXICAL_WEIGHT))
        lexical = _unit_rows(np.stack([_hashed_bag(t) for t in texts])) * np.float32(np.sqrt(LEXICAL_WEIGHT))
        vectors = np.hstack([dense, lexical])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(norms > 0):
            # Only a text with no token at all gets here; a zero vector would make NaN cosines.
            raise JudgeError("empty_text", "cannot embed a text that has no token")
        return (vectors / norms).astype(np.float32)

    # -- per-record context index -------------------------------------------------------------

    def _contexts(self, rec: RecordText, usage: Usage) -> ContextIndex:
        index = rec.memo.get(_MEMO_KEY)
        if isinstance(index, ContextIndex):
            return index
        sentences = context_sentences(rec.contexts)
        if not sentences:
            raise JudgeError("no_context_text", "the contexts contain no sentence")
        per_sentence = [frozenset(content_tokens(s, drop_question_words=False)) for s in sentences]
        sentence_words = [sorted({word for _, word in latin_words(s)}) for s in sentences]
        words = sorted({w for ws in sentence_words for w in ws})
        row = {w: i for i, w in enumerate(words)}
        holding: dict[str, list[int]] = {}
        for i, toks in enumerate(per_sentence):
            for tok in toks:
                holding.setdefault(tok, []).append(i)
        index = ContextIndex(
            sentences, self.embed(sentences, usage), frozenset().union(*per_sentence), per_sentence,
            self._word_vectors(words), [np.array([row[w] for w in ws], dtype=np.int64) for ws in sentence_words],
            holding, facts(rec.contexts),
        )
        rec.memo[_MEMO_KEY] = index
        return index

    # -- faithfulness -------------------------------------------------------------------------

    def statements(self, rec: RecordText, usage: Usage) -> list[str]:
        # "I don't know." claims nothing, nor does "The passages do not mention it": an evasion or
        # the documents' silence is no statement to check.
        # A claim said twice is one claim: counted twice, a repeated sentence weighed double in the mean.
        return list(dict.fromkeys(
            s for c in claims(rec.answer)
            if not is_noncommittal(c) and not states_silence(c) and (s := claim_content(c)) is not None))

    def verify(self, rec: RecordText, statements: list[str], usage: Usage) -> list[Verdict]:
        """Each statement is aligned to its closest context sentence (the evidence) and checked
        twice: against all contexts, and against the evidence with its neighbouring sentences. The
        geometric mean of the two coverages keeps a claim stitched together from words scattered
        over unrelated passages below one a passage states."""
        return [Verdict(support(a), a.evidence) for a in self.alignments(rec, statements, usage)]

    def alignments(self, rec: RecordText, statements: list[str], usage: Usage) -> list[Alignment]:
        """Each statement with its closest context sentence, the tokens of that sentence and its
        neighbours, and the synonym credit its missing words get anywhere and nearby: what a
        verdict is made of (the learned judge reads the windows it proposes)."""
        if not statements:
            return []
        ctx = self._contexts(rec, usage)
        vectors = self.embed(statements, usage)
        # Each statement's closest context sentence, a block of statements at a time: the whole
        # statements x sentences matrix of a long record would be tens of MB.
        closest = np.concatenate([(vectors[i:i + EMBED_BLOCK] @ ctx.vectors.T).argmax(axis=1)
                                  for i in range(0, len(vectors), EMBED_BLOCK)])
        synonyms = self._synonyms(statements, ctx)
        anywhere = synonyms.credit(synonyms.tokens, frozenset(), None)
        asked = frozenset(content_tokens(rec.question, drop_question_words=False))
        out = []
        for statement, vector, closest_one in zip(statements, vectors, closest.tolist(), strict=True):
            tokens = content_tokens(statement, drop_question_words=False)
            candidates = [self._near(ctx, synonyms, tokens, closest_one)]
            anchored = _anchored(ctx, tokens, name_tokens(statement))
            if anchored is not None and anchored != closest_one:
                candidates.append(self._near(ctx, synonyms, tokens, anchored))
            elsewhere = _numbers_elsewhere(tokens, ctx)
            best, window, near, nearby = max(candidates, key=lambda c: _coverage(tokens, c[2], c[3], elsewhere))
            out.append(Alignment(statement, tokens, ctx, best, window, near, anywhere, nearby,
                                 float(vector @ ctx.vectors[best]), asked))
        return out

    @staticmethod
    def _near(ctx: ContextIndex, synonyms: _SynonymCredit, tokens: list[str], best: int
              ) -> tuple[int, range, frozenset[str], dict[str, float]]:
        """The evidence `best` with its neighbours: their tokens and the synonym credit of the
        statement's words they lack."""
        window = range(max(0, best - 1), min(len(ctx.sentences), best + 2))
        near = frozenset().union(*ctx.sentence_tokens[window.start:window.stop])
        nearby = synonyms.credit([t for t in tokens if t not in near], near,
                                 np.concatenate(ctx.sentence_words[window.start:window.stop]))
        return best, window, near, nearby

    def _word_vectors(self, words: list[str]) -> np.ndarray:
        """Unit static embeddings of single words, one row each."""
        if not words:
            return np.zeros((0, self._model.table.shape[1]), np.float32)
        found = {w: v for w in words if (v := self._words.get(w)) is not None}
        missing = [w for w in words if w not in found]
        if missing:
            for word, vec in zip(missing, _unit_rows(self._model.encode(missing)), strict=True):
                # A copy, for the same reason as in embed().
                self._words.put(word, vec.copy())
                found[word] = vec
        return np.stack([found[w] for w in words])

    def _synonyms(self, statements: list[str], ctx: ContextIndex) -> _SynonymCredit:
        """The synonym credit each Latin word of the statements can get from the context words: 0
        at or below SYNONYM_NONE, rising to 1 at SYNONYM_FULL. A paraphrase ("the shop sells bikes"
        for "the store sells bicycles") keeps most of its support; a word with no near synonym in
        the contexts gets none."""
        words = {tok: word for s in statements for tok, word in latin_words(s)}
        vectors = self._word_vectors(list(words.values()))
        return _SynonymCredit({tok: i for i, tok in enumerate(words)}, vectors, ctx.word_vectors)

    # -- answer relevancy ---------------------------------------------------------------------

    def questions(self, rec: RecordText, n: int, usage: Usage) -> GeneratedQuestions:
        """Ragas samples n questions from the whole answer; an off-topic part of the answer shows
        up in a share of them. We emulate that deterministically: the answer is cut into n slices;
        a slice that answers something asked stands for the question the whole answer answers
        (`_answered`), any other slice stands for itself, so off-topic text lowers the mean in
        proportion to its share and unanswered parts of the question lower every on-topic one.
        An answer that refuses, only describes the documents or only says the question back
        commits to nothing: noncommittal, as Ragas's judge would classify it."""
        parts = claims(rec.answer)
        answering = [p for p in parts if not (is_noncommittal(p) or answers_nothing(p, rec.question))]
        if not answering:
            return GeneratedQuestions(questions=[], noncommittal=True)
        slices = _slices(parts, n)
        subject = _subject(rec.question, [" ".join(s) for s in slices])
        asked_tokens = set(content_tokens(rec.question, drop_question_words=False))
        new = {p: new_content(p, asked_tokens) for p in parts}
        said = self._said(rec, new, usage)
        answered = _answered(rec.question, " ".join(answering), frozenset().union(*(said[p] for p in answering)))
        topical = self._topical(rec, answering, said, subject, usage)
        on_topic: dict[str, bool] = {}
        for i, p in enumerate(parts):
            text, _, own = new[p]
            # A fragment too short to say what it is about goes with the part before it.
            on_topic[p] = p in answering and (
                topical[p] or (i > 0 and on_topic[parts[i - 1]] and text_weight(text, own) < FRAGMENT_CHARS))
        questions = [
            answered if answered and any(on_topic[p] for p in parts_of_slice) else " ".join(parts_of_slice)
            for parts_of_slice in slices
        ]
        return GeneratedQuestions(questions=questions, noncommittal=False)

    def _topical(self, rec: RecordText, parts: list[str], said: dict[str, frozenset[str]],
                 subject: frozenset[str], usage: Usage) -> dict[str, bool]:
        """Whether each answering part addresses something asked (`_on_topic`)."""
        return {p: _on_topic(rec.question, p, said[p], subject) for p in parts}

    def _said(self, rec: RecordText, new: dict[str, tuple[str, set[int], set[int]]], usage: Usage
              ) -> dict[str, frozenset[str]]:
        """Each part's content tokens, with those of the context sentences it restates (`_restated`,
        by what the part says beyond the question: `new`, from text.new_content). An answer leaves the question's
        subject implied where its source names it: "Yes, from User Settings at
        any time." answers "Can I revoke a token?" because the sentence it says again, "Tokens can be
        revoked at any time from User Settings.", is about revoking tokens. Only the words the
        question lacks link a part to its source: "Yeti Airlines is a popular airline in Nepal" names
        the subject of every sentence about the crash, and restates none of them."""
        said = {p: frozenset(content_tokens(p)) for p in new}
        try:
            ctx = self._contexts(rec, usage)
        except JudgeError as e:
            if e.reason != "no_context_text":
                raise
            return said  # answer relevancy needs no contexts: with no sentence there, nothing links
        for part, (text, _, own) in new.items():
            restated = _restated(ctx, text, own)
            said[part] = said[part].union(*(ctx.sentence_tokens[i] for i in restated))
        return said

    # -- context relevancy --------------------------------------------------------------------

    def relevant_sentences(self, rec: RecordText, sentences: list[str], usage: Usage) -> list[float]:
        """A sentence's need relative to the record's best sentence (`_need`), times how much of the
        question the contexts speak of at all (`_on_question`, above ON_QUESTION_FLOOR): relative
        alone, the best sentence of a retrieval that missed the topic was needed as fully as a right
        one, and context relevancy could not tell a wrong document from a right one across records
        (a Japanese question scored higher with another question's passage than with its own)."""
        if not sentences:
            return []
        ctx = self._contexts(rec, usage)
        vectors = ctx.vectors if ctx.sentences == sentences else self.embed(sentences, usage)
        sims = vectors @ self.embed([rec.question], usage)[0]
        topical = self._on_question(rec.question, ctx)
        return [need * (ON_QUESTION_FLOOR + (1.0 - ON_QUESTION_FLOOR) * topical) for need in _need(sims)]

    def _on_question(self, question: str, ctx: ContextIndex) -> float:
        """The largest share of the question's content words that one context sentence holds, in
        characters (text.text_weight: a Japanese word is not its several bigrams, most of which take
        in a particle), a missing English word counting by its closest context word (synonym credit, as
        for statements); 1 for a question with no content word. One sentence, not all contexts
        together: padding a passage with more sentences must not make it more on the question."""
        spans = token_spans(question)
        if not spans:
            return 1.0
        text = normalise(question)
        tokens = list(dict.fromkeys(tok for _, _, tok in spans))
        chars = sorted(set().union(*(range(a, b) for a, b, _ in spans)))
        column = {c: k for k, c in enumerate(chars)}
        # Which characters each token covers, and what each character weighs.
        covers = np.zeros((len(tokens), len(chars)), np.float32)
        for a, b, tok in spans:
            covers[tokens.index(tok), [column[c] for c in range(a, b)]] = 1.0
        weights = np.array([text_weight(text, {c}) for c in chars], np.float32)
        credit = self._synonyms([question], ctx).ramps(tokens)  # tokens x context words
        best = 0.0
        for held, words in zip(ctx.sentence_tokens, ctx.sentence_words, strict=True):
            found = credit[:, words].max(axis=1) if len(words) else np.zeros(len(tokens), np.float32)
            found = np.maximum(found, np.array([tok in held for tok in tokens], np.float32))
            best = max(best, float((covers * found[:, None]).max(axis=0) @ weights))
        return best / float(weights.sum())

    # -- context precision --------------------------------------------------------------------

    def useful_contexts(self, rec: RecordText, usage: Usage) -> list[float]:
        start = time.perf_counter()
        useful = usefulness(rec.question, rec.contexts, rec.answer)
        usage.calls += 1
        usage.seconds += time.perf_counter() - start
        return useful

    # -- aspect critique ----------------------------------------------------------------------

    def critique(self, rec: RecordText, criterion: str, samples: int, usage: Usage) -> list[bool]:
        # Harm, malice, correctness or style in general need a model that reads the answer;
        # lexical signals would give verdicts that look like judgements and are not.
        raise JudgeError("unsupported_by_judge", "the local judge does not judge aspects; use the openai judge")


def _unit_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)


def _hashed_bag(text: str) -> np.ndarray:
    """Bag of content tokens hashed into a fixed vector; crc32 because Python's str hash changes
    between processes and the vectors must be the same in every scorer."""
    vec = np.zeros(HASH_DIM, dtype=np.float32)
    for tok in content_tokens(text):
        vec[zlib.crc32(tok.encode("utf-8")) % HASH_DIM] += NUMBER_WEIGHT if is_decisive(tok) else 1.0
    return vec


class _SynonymCredit:
    """Best synonym credits without the whole (statement words x context words) matrix: a long
    record (1,140 statements over 3,830 context sentences) made it tens of MB, and its temporaries
    several times that. Cosines are taken a block of words at a time, and the ramp is monotone, so
    a word's best credit is the ramp of its best cosine."""

    BLOCK = 256

    def __init__(self, rows: dict[str, int], vectors: np.ndarray, context: np.ndarray) -> None:
        self.tokens = list(rows)
        self._rows = rows
        self._vectors = vectors
        self._context = context

    def ramps(self, tokens: list[str]) -> np.ndarray:
        """Each token's credit against every context word, a row of zeros for a token with no
        vector: the whole matrix, so for a few tokens only (a question's)."""
        out = np.zeros((len(tokens), len(self._context)), np.float32)
        picked = [k for k, t in enumerate(tokens) if t in self._rows]
        if picked and len(self._context):
            cosines = self._vectors[[self._rows[tokens[k]] for k in picked]] @ self._context.T
            out[picked] = np.clip((cosines - SYNONYM_NONE) / (SYNONYM_FULL - SYNONYM_NONE), 0.0, 1.0)
        return out

    def credit(self, tokens: list[str], have: frozenset[str], among: np.ndarray | None) -> dict[str, float]:
        """The best credit of each token among the given context words (all for None)."""
        picked = [t for t in tokens if t in self._rows and t not in have]
        context = self._context if among is None else self._context[among]
        if not picked or not len(context):
            return {}
        rows = self._vectors[[self._rows[t] for t in picked]]
        best = np.concatenate([(rows[i:i + self.BLOCK] @ context.T).max(axis=1)
                               for i in range(0, len(rows), self.BLOCK)])
        ramp = np.clip((best - SYNONYM_NONE) / (SYNONYM_FULL - SYNONYM_NONE), 0.0, 1.0)
        return {tok: float(v) for tok, v in zip(picked, ramp, strict=True) if v > 0.0}


def _anchored(ctx: ContextIndex, tokens: list[str], names: list[str]) -> int | None:
    """The context sentence holding most of the statement's numbers and names (the first of
    equals), or None when it has none the contexts hold. The closest sentence by embedding can be
    another one: in a record of data ("{'address': '2026 De La Vina St', ...}") every sentence of a
    review is closer to "Taffy's Pizza is located at 2026 De La Vina St" than the record's fields,
    and the number and street were then missing near the evidence."""
    counts: dict[int, int] = {}
    for tok in dict.fromkeys([t for t in tokens if is_decisive(t)] + names):
        for i in ctx.holding.get(tok, ()):
            counts[i] = counts.get(i, 0) + 1
    return max(counts, key=lambda i: (counts[i], -i)) if counts else None


def _numbers_elsewhere(tokens: list[str], ctx: ContextIndex) -> dict[str, float]:
    """Credit near the evidence for the statement's numbers the contexts hold anywhere: a summary
    sentence may join a name from one sentence to a flight number from another, and it scored 0 for
    that when only the evidence's neighbours counted."""
    return {t: FUSED_NUMBER for t in tokens if is_decisive(t) and t in ctx.tokens}


def _coverage(tokens: list[str], available: frozenset[str], credit: dict[str, float] | None = None,
              number_credit: dict[str, float] | None = None) -> float:
    """Share of the statement's words that the contexts contain (a missing word counts by its
    synonym credit, if any), times the share of its numbers that they contain: numbers are
    decisive, so a wrong year or amount cannot be outvoted by the words around it; a wrong month or
    weekday ("Monday, 30 August" vs "Sunday, 30 July") counts as a missing word."""
    words = [t for t in tokens if not is_decisive(t)]
    numbers = [t for t in tokens if is_decisive(t)]
    if not tokens:
        return 0.0
    return found_share(words, available, credit or {}) * found_share(numbers, available, number_credit or {})


def found_share(tokens: list[str], available: frozenset[str], credit: Mapping[str, float]) -> float:
    """Share of the tokens found (a missing one counts by its credit); 1 for no tokens."""
    return sum(1.0 if t in available else credit.get(t, 0.0) for t in tokens) / len(tokens) if tokens else 1.0


def support(a: Alignment) -> float:
    """A statement's verdict: the geometric mean of its wording's two coverages, discounted when its
    evidence is not close (`_support`) and made a verdict (`_verdict`), times its numbers (each all
    or nothing), the share of its names found in the contexts and the agreement of its yes/no facts."""
    if not a.tokens:
        return 0.0
    # The wording is a matter of degree (paraphrases); the numbers, names and facts decide: the
    # verdict of the wording is multiplied by them, so that a wrong number is never made up for.
    return wording_verdict(a) * decisive(a)


def wording_verdict(a: Alignment) -> float:
    """The verdict on the statement's words (numbers aside): the geometric mean of their coverage
    in all contexts and near the evidence, discounted when the evidence is not close."""
    words = [t for t in a.tokens if not is_decisive(t)]
    wording = float(np.sqrt(found_share(words, a.context.tokens, a.credit_anywhere)
                            * found_share(words, a.near, a.credit_near)))
    return _verdict(_support(wording, a.closeness))


def decisive(a: Alignment) -> float:
    """What no paraphrase makes up for, in [0, 1]: each of the statement's numbers (all or nothing,
    checked against all contexts and near the evidence like the words; one the contexts hold only
    elsewhere counts FUSED_NUMBER near the evidence), the share of its names the contexts hold, and
    the agreement of its yes/no facts with a structured record's."""
    numbers = [t for t in a.tokens if is_decisive(t)]
    numbers_found = (math.sqrt(math.prod(1.0 if t in a.near else FUSED_NUMBER for t in numbers))
                     if all(t in a.context.tokens for t in numbers) else 0.0)
    # Names are decisive like numbers: no synonym stands in for "Thomas Reid"; but a name the question
    # gives ("how much to replace sewer lines in Michigan") is the answer's scope, not an invented
    # entity. The polarity of a record's yes/no fact is decisive too ("does not take reservations"
    # against 'RestaurantsReservations': True).
    names = name_tokens(a.statement)
    return (numbers_found * found_share(names, a.context.tokens, {n: 1.0 for n in names if n in a.asked})
            * agreement(a.statement, a.context.facts))


def _verdict(support: float) -> float:
    """The lexical support made into a verdict the way a judge gives one: supported or not, with
    the doubt in between. Faithfulness is the mean of verdicts; averaged raw, a faithful answer's
    paraphrases (lexical support 0.4-0.6) lost nearly as much as an invented sentence (0.1-0.2)
    costs, so one invention among ten supported sentences hardly showed. A logistic step at
    VERDICT_MIDPOINT, VERDICT_SCALE wide, rescaled so that 0 stays 0 and 1 stays 1; monotone in the
    support."""
    return min(1.0, max(0.0, (_step(support) - _STEP_AT_0) / (_STEP_AT_1 - _STEP_AT_0)))


def _step(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-(x - VERDICT_MIDPOINT) / VERDICT_SCALE))


_STEP_AT_0, _STEP_AT_1 = _step(0.0), _step(1.0)


def _support(coverage: float, best_sim: float) -> float:
    """Soft support: lexical coverage, discounted by up to half when no single context sentence
    is close to the statement (its words are scattered over unrelated sentences). A product, so
    that a missing fact always lowers support, and continuous, so that two answers rarely tie."""
    return float(np.clip(coverage * (1.0 + max(best_sim, 0.0)) / 2.0, 0.0, 1.0))


def _restated(ctx: ContextIndex, text: str, own: set[int]) -> set[int]:
    """The context sentences that hold RESTATES_SHARE, and at least RESTATES_CHARS, of what the part
    says beyond the question (`own`: offsets in the normalised part `text`, by `text_weight`); or
    two neighbours that each hold a share the other lacks and together enough: an answer sentence
    may join two of the source's."""
    held: dict[int, set[int]] = {}
    for start, end, tok in token_spans(text):
        chars = own.intersection(range(start, end))
        if chars:
            for i in ctx.holding.get(tok, ()):
                held.setdefault(i, set()).update(chars)
    needed = max(RESTATES_CHARS, RESTATES_SHARE * text_weight(text, own))
    restated = {i for i, chars in held.items() if text_weight(text, chars) >= needed}
    restated.update(j for i in held if i + 1 in held
                    and min(text_weight(text, held[i] - held[i + 1]), text_weight(text, held[i + 1] - held[i]))
                    >= RESTATES_CHARS
                    and text_weight(text, held[i] | held[i + 1]) >= needed
                    for j in (i, i + 1))
    return restated


def _slices(parts: list[str], n: int) -> list[list[str]]:
    """n contiguous, nearly equal slices of the answer's claims, so every part of the answer, the
    off-topic part included, stands in one pseudo-question."""
    if not parts or n <= 0:
        return []
    k = min(n, len(parts))
    bounds = np.linspace(0, len(parts), k + 1).round().astype(int)
    return [parts[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def _subject(question: str, slices: list[str]) -> frozenset[str]:
    """The question's tokens that every slice of a multi-slice answer repeats: the subject of the
    question, which says nothing about whether what was asked about it is answered."""
    if len(slices) < 2:
        return frozenset()
    common = set.intersection(*(set(content_tokens(s)) for s in slices))
    return frozenset(common & set(content_tokens(question)))


def _addressed(question: str, said: frozenset[str]) -> str:
    """The words of the asked question that the answer addresses (`said`: its tokens and those of
    the context sentences it restates), in the question's order: the question an LLM would generate
    from the answer names the same aspects; what it would add in its own words we cannot generate."""
    return keep_only(question, [span for span in token_spans(question) if span[2] in said])


def _answered(question: str, answer: str, said: frozenset[str]) -> str:
    """The question the answer answers, part by part: a part that asks for a kind of thing (a date,
    a number, a person, a place) counts whole when the answer gives that kind of thing (the
    subject is implied: 「50台分あります」 answers 「駐車場は何台分ありますか」) and not at all when
    it does not, however many of its words the answer repeats; an open part (what, how, why)
    counts by the words of it that the answer addresses."""
    kept = []
    for part in question_parts(question):
        if asked(part):
            if answers_part(part, answer, question):
                kept.append(part)
        elif addressed := _addressed(part, said):
            kept.append(addressed)
    return " ".join(kept)


def _on_topic(question: str, part: str, said: frozenset[str], subject: frozenset[str]) -> bool:
    """Whether the part addresses something asked beyond the question's subject ("X is a
    beautiful landmark" names X but answers nothing asked about X), itself or through the context
    sentences it restates (`said`), or gives the kind of thing a part of the question asks for
    ("Built in 1872." for "When was X built?")."""
    if (said - subject) & set(content_tokens(question)):
        return True
    return any(asked(q) and answers_part(q, part, question) for q in question_parts(question))


def _need(sims: np.ndarray) -> list[float]:
    """A sentence's need is its cosine with the question relative to the record's best sentence:
    the best match is needed, unrelated sentences are not, on the record's own scale (static
    cosines run higher for some topics and languages than for others)."""
    top = float(sims.max())
    if top <= 0.0:
        return [0.0] * len(sims)
    return [float(v) for v in np.clip(sims / top, 0.0, 1.0)]
