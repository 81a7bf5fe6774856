"""SelfCheck consistency with the local llama.cpp model as sample generator and judge.

    RAGPULSE_LLM_VENV=~/.cache/ragpulse/venv-llm nice -n 10 .venv/bin/python bench/selfcheck.py \
        [--wikieval-rows 5] [--ragtruth-rows 20] [--n 3] [--minutes 60]

One llama.cpp server (tests/support/llm_server.py) answers every request. Samples come from
scorer.selfcheck's generator pointed at it (N per question, seeds 0..N-1) and are cached in
--cache, so a rerun scores the same samples without generating them again.

- WikiEval dev, faithfulness pairs (answer vs ungrounded_answer, contexts = context_v1): does the
  faithful answer score strictly higher? (ties and failures count as disagreement, as in
  bench/quality.py). SelfCheck-Prompt (support by the openai judge on the same server) and the
  local variant (support by the local judge), on the same samples; the local judge's
  faithfulness beside them. Calls and tokens per record, as counted by the judge, against the
  seed's design (N sample calls, then one Yes/No call per sentence and sample: N + S x N calls;
  its prompt tokens counted with the server's tokenizer, one completion token per check call).
- RAGTruth dev, QA rows (a seeded draw alternating hallucinated and not): ROC AUC of
  (1 - selfcheck, local variant) against `hallucinated`, beside the local judge's (1 - faithfulness)
  on the same rows.
Each agreement and AUC comes with a 95% percentile bootstrap interval over the rows.
RAGTruth runs first (a row costs only its samples), then WikiEval (two verify calls per sample
and row); rows start until --minutes have passed, and the tables cover the rows done.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from overload import cpu_model
from quality import load_pairs
from quality_peer import RAGTRUTH, WIKIEVAL, auc, read_jsonl

from ragpulse.scorer.judge.base import JudgeError, RecordText, Usage
from ragpulse.scorer.judge.local import LexicalJudge
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
from ragpulse.scorer.judge.openai.generator import SampleGenerator
from ragpulse.scorer.judge.openai.judge import OpenAIJudge
from ragpulse.scorer.metrics import METRICS, MetricFailure
from ragpulse.scorer.metrics.selfcheck import selfcheck
from ragpulse.scorer.selfcheck_config import SampleGeneratorConfig
from ragpulse.scorer.sentences import split_sentences

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from llm_server import MODEL_ALIAS, available, llama_server  # noqa: E402

# The seed's prompts (SelfCheck-Prompt as the seed implements it), to count what its design costs.
SEED_CHECK = "Context: {}\nSentence: {}\nIs the sentence supported by the context above?\nAnswer Yes or No:"
BOOTSTRAP = 2000


class CachedSamples:
    """The generator's samples, kept in a JSON file by question, contexts and N. A cached entry
    still charges the usage its generation cost, so that the cost per record stays what
    production pays."""

    def __init__(self, generator: SampleGenerator, path: Path) -> None:
        self.generator = generator
        self.path = path
        self.entries: dict[str, dict] = json.loads(path.read_text()) if path.exists() else {}

    def key(self, rec: RecordText) -> str:
        text = json.dumps([MODEL_ALIAS, self.generator.n, self.generator.config.seed, rec.question, rec.contexts])
        return hashlib.sha256(text.encode()).hexdigest()

    def samples(self, rec: RecordText, usage: Usage) -> list[str]:
        key = self.key(rec)
        if key not in self.entries:
            spent = Usage()
            samples = self.generator.samples(rec, spent)
            self.entries[key] = {"samples": samples, "usage": vars(spent)}
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.entries, ensure_ascii=False))
            tmp.replace(self.path)
        usage.add(Usage(**self.entries[key]["usage"]))
        return list(self.entries[key]["samples"])


@dataclass
class Cost:
    """Per-record totals: ragpulse's as counted by the judge, the seed design's as computed."""

    records: int = 0
    sentences: int = 0
    ours: Usage = field(default_factory=Usage)
    seed: Usage = field(default_factory=Usage)


class Tokens:
    """Prompt tokens of a chat request as the server counts them: its tokenizer on the text, plus
    the chat template's own tokens measured once from a real one-token request."""

    def __init__(self, base_url: str) -> None:
        self.root = base_url.removesuffix("/v1")
        probe = "Is the sky blue?"
        reply = self._post(base_url + "/chat/completions", {
            "model": MODEL_ALIAS, "max_tokens": 1, "messages": [{"role": "user", "content": probe}]})
        self.template = reply["usage"]["prompt_tokens"] - self.count(probe)

    @staticmethod
    def _post(url: str, body: dict) -> dict:
        req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as resp:
            return json.loads(resp.read())

    def count(self, text: str) -> int:
        return len(self._post(self.root + "/extras/tokenize", {"input": text})["tokens"])

    def chat(self, text: str) -> int:
        return self.count(text) + self.template


def guarded(fn: Callable[[], float], failures: Counter[str], name: str) -> float | None:
    try:
        return fn()
    except (MetricFailure, JudgeError) as exc:
        failures[f"{name}/{exc.reason}"] += 1
        return None


def bootstrap(stat: Callable[[list[int]], float], n: int, seed: int = 7) -> tuple[float, float]:
    """95% percentile interval of `stat` over rows drawn with replacement (undefined draws skipped)."""
    rng = random.Random(seed)
    values = []
    for _ in range(BOOTSTRAP):
        v = stat([rng.randrange(n) for _ in range(n)])
        if v == v:
            values.append(v)
    if not values:
        return float("nan"), float("nan")
    values.sort()
    return values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))]


def agreement_line(name: str, wins: list[bool]) -> str:
    n = len(wins)
    lo, hi = bootstrap(lambda idx: sum(wins[i] for i in idx) / n, n)
    return f"| {name} | {sum(wins) / n:.2f} ({sum(wins)}/{n}) | {lo:.2f}–{hi:.2f} |"


def auc_line(name: str, risk: Sequence[float], labels: Sequence[int]) -> str:
    lo, hi = bootstrap(lambda idx: auc([risk[i] for i in idx], [labels[i] for i in idx]), len(risk))
    value = auc(list(risk), list(labels))
    return f"| {name} | {value:.2f} | {lo:.2f}–{hi:.2f} | {len(risk)} ({sum(labels)} hallucinated) |"


def wikieval(rows: int, judge: OpenAIJudge, local: LexicalJudge, source: CachedSamples, tokens: Tokens,
             deadline: float, failures: Counter[str]) -> tuple[dict[str, list[bool]], Cost]:
    wins: dict[str, list[bool]] = {"prompt": [], "local": [], "faithfulness": []}
    cost = Cost()
    for i, pairs in enumerate(load_pairs(WIKIEVAL, rows)):
        if time.monotonic() > deadline:
            break
        started = time.monotonic()
        pair = pairs[0]
        assert pair.metric == "faithfulness"
        scores: dict[str, list[float | None]] = {k: [] for k in wins}
        for rec in (pair.better, pair.worse):
            usage = Usage()
            scores["prompt"].append(guarded(lambda r=rec, u=usage: selfcheck(judge, r, u, source)[0], failures,
                                            "prompt"))
            scores["local"].append(guarded(lambda r=rec: selfcheck(local, r, Usage(), source)[0], failures, "local"))
            scores["faithfulness"].append(guarded(lambda r=rec: METRICS["faithfulness"](local, r, Usage())[0],
                                                  failures, "faithfulness"))
            seed_cost(rec, source, tokens, cost)
            cost.ours.add(usage)
        for k, (hi, lo) in scores.items():
            wins[k].append(hi is not None and lo is not None and hi > lo)
        print(f"wikieval row {i}: " + ", ".join(f"{k} {fmt(v[0])} vs {fmt(v[1])}" for k, v in scores.items())
              + f" ({time.monotonic() - started:.0f} s)", flush=True)
    return wins, cost


def fmt(value: float | None) -> str:
    return "failed" if value is None else f"{value:.3f}"


def seed_cost(rec: RecordText, source: CachedSamples, tokens: Tokens, cost: Cost) -> None:
    """What the seed's design costs for this record: the same N samples (what generating them cost
    here), then one Yes/No call per sentence and sample, the sample alone as its context."""
    generation = Usage()
    samples = source.samples(rec, generation)
    sentences = split_sentences(rec.answer)
    cost.records += 1
    cost.sentences += len(sentences)
    cost.seed.add(generation)
    cost.seed.add(Usage(calls=len(sentences) * len(samples),
                        prompt_tokens=sum(tokens.chat(SEED_CHECK.format(x, s)) for x in samples for s in sentences),
                        completion_tokens=len(sentences) * len(samples)))


def ragtruth_rows(count: int, seed: int) -> list[dict]:
    """QA rows, hallucinated and not taken in turn from seeded shuffles, so any prefix is balanced."""
    qa = [r for r in read_jsonl(RAGTRUTH) if r["task_type"] == "QA"]
    rng = random.Random(seed)
    pos = [r for r in qa if r["hallucinated"]]
    neg = [r for r in qa if not r["hallucinated"]]
    rng.shuffle(pos)
    rng.shuffle(neg)
    out = []
    for p, q in zip(pos, neg, strict=False):
        out += [p, q]
    return out[:count]


def ragtruth(count: int, seed: int, local: LexicalJudge, source: CachedSamples, deadline: float,
             failures: Counter[str]) -> tuple[list[float], list[float], list[int]]:
    check, faith, labels = [], [], []
    for i, row in enumerate(ragtruth_rows(count, seed)):
        if time.monotonic() > deadline:
            break
        started = time.monotonic()
        rec = RecordText(row["question"], row["contexts"], row["answer"])
        sc = guarded(lambda r=rec: selfcheck(local, r, Usage(), source)[0], failures, "ragtruth_selfcheck")
        fa = guarded(lambda r=rec: METRICS["faithfulness"](local, r, Usage())[0], failures, "ragtruth_faithfulness")
        if sc is None or fa is None:
            continue
        check.append(1.0 - sc)
        faith.append(1.0 - fa)
        labels.append(int(row["hallucinated"]))
        print(f"ragtruth row {i} ({row['id']}, hallucinated={row['hallucinated']}): selfcheck {sc:.3f}, "
              f"faithfulness {fa:.3f} ({time.monotonic() - started:.0f} s)", flush=True)
    return check, faith, labels


def cost_table(cost: Cost, n: int) -> list[str]:
    per = max(cost.records, 1)

    def row(name: str, u: Usage) -> str:
        return f"| {name} | {u.calls / per:.1f} | {u.prompt_tokens / per:,.0f} | {u.completion_tokens / per:,.0f} |"

    return [
        f"Cost per record ({cost.records} records, {cost.sentences / per:.1f} sentences each, N = {n}):",
        "",
        "| design | calls | prompt tokens | completion tokens |",
        "| --- | ---: | ---: | ---: |",
        row("ragpulse: N sample calls + N verify calls (all sentences in one), counted", cost.ours),
        row("seed: N sample calls + S x N Yes/No calls, checks tokenized, 1 completion token each", cost.seed),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wikieval-rows", type=int, default=5)
    parser.add_argument("--ragtruth-rows", type=int, default=20)
    parser.add_argument("--n", type=int, default=3, help="samples per question")
    parser.add_argument("--minutes", type=float, default=60.0, help="no row starts after this")
    parser.add_argument("--seed", type=int, default=3, help="the RAGTruth draw")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragpulse-selfcheck-samples.json"))
    args = parser.parse_args(argv)
    if not available():
        sys.exit("no LLM server: run deploy/llm/install.sh or set RAGPULSE_LLM_VENV")
    started = time.monotonic()
    deadline = started + args.minutes * 60
    failures: Counter[str] = Counter()
    local = LexicalJudge()
    with llama_server(n_ctx=8192, log_path=Path("/tmp/ragpulse-selfcheck-server.log")) as base_url:
        gen_config = SampleGeneratorConfig(model=MODEL_ALIAS, base_url=base_url, api_key="unused", n=args.n,
                                           timeout_s=900, max_retries=1)
        source = CachedSamples(SampleGenerator(gen_config.endpoint(), args.n), args.cache)
        judge = OpenAIJudge(OpenAIJudgeConfig(model=MODEL_ALIAS, base_url=base_url, api_key="unused",
                                               timeout_s=900, max_retries=1), fallback_embedder=local)
        tokens = Tokens(base_url)
        # RAGTruth first: its rows cost only the samples, and its labels give the AUC that a
        # handful of WikiEval pairs cannot.
        check, faith, labels = ragtruth(args.ragtruth_rows, args.seed, local, source, deadline, failures)
        wins, cost = wikieval(args.wikieval_rows, judge, local, source, tokens, deadline, failures)
    load = os.getloadavg()
    out = [
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {cpu_model()} ({os.cpu_count()} cpus), load average "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end, {(time.monotonic() - started) / 60:.0f} min; "
        f"model {MODEL_ALIAS}, N = {args.n}",
        "",
        f"WikiEval dev faithfulness pairs ({len(wins['prompt'])} rows): faithful answer scores strictly higher",
        "",
        "| measure | agreement | 95% bootstrap |",
        "| --- | ---: | --- |",
        agreement_line("SelfCheck-Prompt (openai judge on the local model)", wins["prompt"]) if wins["prompt"] else "",
        agreement_line("SelfCheck local variant (local judge's support)", wins["local"]) if wins["local"] else "",
        agreement_line("faithfulness, local judge", wins["faithfulness"]) if wins["faithfulness"] else "",
        "",
        *cost_table(cost, args.n),
        "",
        f"RAGTruth dev QA rows ({len(labels)}): AUC of risk against `hallucinated`",
        "",
        "| measure | AUC | 95% bootstrap | rows |",
        "| --- | ---: | --- | --- |",
    ]
    if labels:
        out += [auc_line("1 - selfcheck, local variant (local model's samples)", check, labels),
                auc_line("1 - faithfulness, local judge", faith, labels)]
    out += ["", f"failures: {dict(failures) or 'none'}"]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
