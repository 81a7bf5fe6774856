"""Training pairs for the two heads, from the sources in manifest.json and seeded synthetic pairs.

support(evidence, statement): NLI pairs (JaNLI, JNLI, JSICK's Japanese side, SNLI, MultiNLI, WiCE, BEGIN) and
statements made from passages (synthetic.py). answers(question, sentence): the sentence of a
reading-comprehension paragraph that holds the answer span against the paragraph's other sentences
(JSQuAD, JaQuAD, QED, COVID-QA), plus restatements of the question and vague half-answers.
A pair is {"task", "a", "b", "label", "source", "lang"}.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

import synthetic
from sources import Source, read_file, sources

Pair = dict[str, object]
_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])|\n+")


def split_sentences(text: str) -> list[tuple[int, str]]:
    """(start offset, sentence) for each sentence of a paragraph."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        end = m.start()
        if text[start:end].strip():
            out.append((start + len(text[start:end]) - len(text[start:end].lstrip()), text[start:end].strip()))
        start = m.end()
    if text[start:].strip():
        out.append((start + len(text[start:]) - len(text[start:].lstrip()), text[start:].strip()))
    return out


def _pair(task: str, a: str, b: str, label: int, source: str, lang: str) -> Pair:
    return {"task": task, "a": a, "b": b, "label": label, "source": source, "lang": lang}


def _tsv(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8")), delimiter="\t", quoting=csv.QUOTE_NONE))


def _nli_label(label: str) -> int:
    return 1 if label.strip().lower() == "entailment" else 0


def _jsonl(m: Path, s: Source) -> Iterator[dict]:
    for path in s.files:
        for line in read_file(m, s, path).decode("utf-8").splitlines():
            yield json.loads(line)


def japanese_tsv(m: Path, s: Source) -> Iterator[Pair]:
    """JaNLI and JSICK: one TSV each, read by their Japanese columns only (JSICK's English ones are
    SICK's, non-commercial)."""
    (path,) = s.files
    for row in _tsv(read_file(m, s, path)):
        yield _pair("support", row["sentence_A_Ja"], row["sentence_B_Ja"], _nli_label(row["entailment_label_Ja"]),
                    s.name, "ja")


def jnli(m: Path, s: Source) -> Iterator[Pair]:
    for row in _jsonl(m, s):
        yield _pair("support", row["sentence1"], row["sentence2"], _nli_label(row["label"]), s.name, "ja")


def wice(m: Path, s: Source) -> Iterator[Pair]:
    # "partially_supported" is not support: a statement half of which is invented is unfaithful.
    for row in _jsonl(m, s):
        yield _pair("support", " ".join(row["evidence"]), row["claim"], int(row["label"] == "supported"), s.name, "en")


_DETOKENIZE = [(re.compile(r" ([.,!?;:%)'])"), r"\1"), (re.compile(r"\( "), "("),
               (re.compile(r" (n't|'s|'re|'ve|'ll|'d|'m)\b"), r"\1")]


def _detokenize(text: str) -> str:
    """SNLI's sentences as e-SNLI stores them, split into tokens ("a dog ."), joined back."""
    text = text.strip()
    for pattern, repl in _DETOKENIZE:
        text = pattern.sub(repl, text)
    return text


def snli(m: Path, s: Source) -> Iterator[Pair]:
    for split in ("dev", "test"):
        premises, hypotheses, labels = (read_file(m, s, f"dataset/eSNLI/{part}.{split}").decode("utf-8").splitlines()
                                        for part in ("s1", "s2", "labels"))
        for a, b, label in zip(premises, hypotheses, labels, strict=True):
            yield _pair("support", _detokenize(a), _detokenize(b), _nli_label(label), s.name, "en")


def mnli(m: Path, s: Source) -> Iterator[Pair]:
    """MultiNLI's matched development set, as the HANS repository keeps it beside its predictions."""
    (path,) = s.files
    for row in _tsv(read_file(m, s, path)):
        yield _pair("support", row["premise"].strip(), row["hypothesis"].strip(), _nli_label(row["gold_label"]),
                    s.name, "en")


def begin(m: Path, s: Source) -> Iterator[Pair]:
    for path in s.files:
        for row in _tsv(read_file(m, s, path)):
            if row["begin_label"] == "Generic":
                continue  # says nothing to check: no statement
            yield _pair("support", row["knowledge"], row["response"], int(row["begin_label"] == "Fully attributable"),
                        s.name, "en")


def _squad(m: Path, s: Source) -> Iterator[tuple[str, str, int]]:
    """(paragraph, question, answer start) of a SQuAD-format file set."""
    for path in s.files:
        data = json.loads(read_file(m, s, path).decode("utf-8"))
        for article in data["data"]:
            for para in article["paragraphs"]:
                for qa in para["qas"]:
                    if qa.get("is_impossible") or not qa.get("answers"):
                        continue
                    yield para["context"], qa["question"], int(qa["answers"][0]["answer_start"])


def _qed(m: Path, s: Source) -> Iterator[tuple[str, str, int]]:
    for line in read_file(m, s, "qed-dev.jsonlines").decode("utf-8").splitlines():
        row = json.loads(line)
        for ann in row.get("original_nq_answers") or []:
            if ann:
                yield row["paragraph_text"], row["question_text"], int(ann[0]["start"])
                break


def answer_pairs(rows: Iterator[tuple[str, str, int]], source: str, lang: str, rng: random.Random) -> Iterator[Pair]:
    """The sentence holding the answer answers the question, alone or with its next sentence; up
    to two other sentences of the same paragraph, the question's words preferred (the hard ones),
    do not, and neither does, for half the questions, a sentence of another paragraph (a retrieval
    that missed the topic: without it the head never sees an off-topic sentence)."""
    rows = list(rows)
    paragraphs = list(dict.fromkeys(p for p, _, _ in rows))
    for paragraph, question, start in rows:
        sentences = split_sentences(paragraph)
        holding = [i for i, (off, sent) in enumerate(sentences) if off <= start < off + len(sent)]
        if not holding:
            continue
        k = holding[0]
        yield _pair("answers", question, sentences[k][1], 1, source, lang)
        if k + 1 < len(sentences) and rng.random() < 0.3:
            joined = sentences[k][1] + (" " if lang == "en" else "") + sentences[k + 1][1]
            yield _pair("answers", question, joined, 1, source, lang)
        if len(paragraphs) > 1 and rng.random() < 0.5:
            other = rng.choice(paragraphs)
            if other != paragraph and (foreign := [s for _, s in split_sentences(other) if len(s) >= 8]):
                yield _pair("answers", question, rng.choice(foreign), 0, f"{source}.other_paragraph", lang)
        others = [sent for i, (_, sent) in enumerate(sentences) if i != k and len(sent) >= 8]
        if not others:
            continue
        qchars = set(question)
        others.sort(key=lambda t: -len(qchars & set(t)) / (1 + len(set(t))))
        picked = others[:1] + rng.sample(others[1:], min(1, len(others) - 1))
        for sent in picked:
            yield _pair("answers", question, sent, 0, source, lang)


READERS = {"janli": japanese_tsv, "jnli": jnli, "jsick": japanese_tsv, "snli": snli, "mnli": mnli, "wice": wice,
           "begin": begin}
QA = {"jsquad": ("ja", _squad), "jaquad": ("ja", _squad), "qed": ("en", _qed), "covidqa": ("en", _squad)}


def build(mirrors: Path, seed: int) -> list[Pair]:
    rng = random.Random(seed)
    pairs: list[Pair] = []
    passages: dict[str, list[str]] = {"en": [], "ja": []}
    for s in sources():
        if s.name in READERS:
            pairs.extend(READERS[s.name](mirrors, s))
        else:
            lang, reader = QA[s.name]
            rows = list(reader(mirrors, s))
            pairs.extend(answer_pairs(iter(rows), s.name, lang, rng))
            passages[lang].extend(dict.fromkeys(p for p, _, _ in rows))
            pairs.extend(synthetic.non_answers([q for _, q, _ in rows], lang, rng))
    for lang, texts in passages.items():
        pairs.extend(synthetic.statements(chunks(texts), lang, rng, per_paragraph=PER_PARAGRAPH[lang]))
    rng.shuffle(pairs)
    return pairs


# English passages are fewer (QED, COVID-QA) than Japanese ones (JSQuAD, JaQuAD): more statements each.
PER_PARAGRAPH = {"en": 6, "ja": 1}
CHUNK_SENTENCES = 8


def chunks(passages: list[str]) -> list[list[str]]:
    """Each passage's sentences, a long article cut into runs of CHUNK_SENTENCES."""
    out = []
    for text in passages:
        sentences = [t for _, t in split_sentences(text)]
        out.extend(sentences[i:i + CHUNK_SENTENCES] for i in range(0, len(sentences), CHUNK_SENTENCES))
    return out


def from_rows(rows: list[dict[str, object]], seed: int) -> list[Pair]:
    """Pairs from a small file of {"lang", "paragraph", "question", "answer_start"} rows by the same
    functions as the real sources: the smoke run's data (train/smoke.jsonl)."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for lang in ("en", "ja"):
        mine = [(str(r["paragraph"]), str(r["question"]), int(r["answer_start"])) for r in rows if r["lang"] == lang]
        pairs.extend(answer_pairs(iter(mine), "smoke", lang, rng))
        pairs.extend(synthetic.non_answers([q for _, q, _ in mine], lang, rng, share=0.5))
        pairs.extend(synthetic.statements(chunks([p for p, _, _ in mine]), lang, rng, per_paragraph=4))
    rng.shuffle(pairs)
    return pairs
