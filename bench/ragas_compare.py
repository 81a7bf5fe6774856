"""Ragas itself on the same WikiEval pairs and the same model as `bench/quality.py --judge openai`,
for the side-by-side in bench/RESULTS.md. Runs in the separate Ragas venv (bench/install_ragas_env.sh):

    RAGAS_DO_NOT_TRACK=true .venv-ragas/bin/python bench/ragas_compare.py \
        --base-url http://127.0.0.1:PORT/v1 [--limit N] [--runs R]

Ragas's metrics: Faithfulness, ResponseRelevancy (answer relevancy) and ContextRelevance (the
current form of context relevancy; the paper's sentence-extraction form is gone from Ragas).
Answer relevancy's embeddings come from ragpulse's local embedder, as in our run, so the two
differ only in how they use the LLM.

Requests go through a counting proxy on 127.0.0.1 that records calls and tokens per record, and
rewrites `max_completion_tokens` (sent by langchain-openai 1.x, ignored by llama.cpp's server) to
`max_tokens`, so generation is capped as Ragas meant it to be.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from quality import DEFAULT_DATA, METRIC_ORDER, load_pairs  # noqa: E402

from ragpulse.scorer.judge.base import RecordText, Usage  # noqa: E402

DEFAULT_MAX_TOKENS = 1024  # when Ragas sets no cap at all


@dataclass
class Counter:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class CountingProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.counter = Counter()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                outer._forward(self, None)

            def do_POST(self) -> None:  # noqa: N802
                outer._forward(self, self.rfile.read(int(self.headers.get("content-length", 0))))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def _forward(self, h: BaseHTTPRequestHandler, raw: bytes | None) -> None:
        path = h.path[3:] if h.path.startswith("/v1") else h.path
        if raw is not None and path.startswith("/chat/completions"):
            body = json.loads(raw)
            cap = body.pop("max_completion_tokens", None)
            body.setdefault("max_tokens", cap or DEFAULT_MAX_TOKENS)
            raw = json.dumps(body).encode()
        req = urllib.request.Request(self.upstream + path, data=raw, method="POST" if raw is not None else "GET")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=900) as resp:
                status, data = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, data = exc.code, exc.read()
        if raw is not None and path.startswith("/chat/completions"):
            try:
                usage = json.loads(data).get("usage") or {}
            except ValueError:
                usage = {}
            with self.counter.lock:
                self.counter.calls += 1
                self.counter.prompt_tokens += int(usage.get("prompt_tokens") or 0)
                self.counter.completion_tokens += int(usage.get("completion_tokens") or 0)
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def take(self) -> Usage:
        with self.counter.lock:
            u = Usage(self.counter.calls, self.counter.prompt_tokens, self.counter.completion_tokens)
            self.counter.calls = self.counter.prompt_tokens = self.counter.completion_tokens = 0
        return u


def build_metrics(base_url: str, model: str) -> dict[str, object]:
    from langchain_core.embeddings import Embeddings
    from langchain_openai import ChatOpenAI
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import ContextRelevance, Faithfulness, ResponseRelevancy

    from ragpulse.scorer.judge.local import LexicalJudge

    local = LexicalJudge()

    class LocalEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return local.embed(list(texts), Usage()).tolist()

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    chat = ChatOpenAI(
        model=model, base_url=base_url, api_key="unused", temperature=0, seed=0, timeout=900, max_retries=0
    )
    # Without the bypasses Ragas raises the temperature and asks for n=3 choices, which the
    # llama.cpp server answers with one.
    llm = LangchainLLMWrapper(chat, bypass_temperature=True, bypass_n=True)
    emb = LangchainEmbeddingsWrapper(LocalEmbeddings())
    return {
        "faithfulness": Faithfulness(llm=llm),
        "answer_relevancy": ResponseRelevancy(llm=llm, embeddings=emb),
        "context_relevancy": ContextRelevance(llm=llm),
    }


def ragas_score(metric: object, rec: RecordText) -> float | None:
    from ragas.dataset_schema import SingleTurnSample

    sample = SingleTurnSample(user_input=rec.question, retrieved_contexts=rec.contexts, response=rec.answer)
    try:
        value = asyncio.run(metric.single_turn_ascore(sample))  # type: ignore[attr-defined]
    except Exception as exc:  # Ragas raises many kinds; each is a failure, counted by type
        print(f"  failure: {type(exc).__name__}: {str(exc)[:120]}", file=sys.stderr)
        return None
    return None if value is None or value != value else float(value)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--runs", type=int, default=1, help="agreement runs (0: cost per record only)")
    args = p.parse_args()

    proxy = CountingProxy(args.base_url)
    metrics = build_metrics(proxy.base_url, args.model)
    rows = load_pairs(args.data, args.limit)
    runs: list[list[float | None]] = []
    for run in range(args.runs):
        agree = dict.fromkeys(METRIC_ORDER, 0)
        failures = dict.fromkeys(METRIC_ORDER, 0)
        values: list[float | None] = []
        for pairs in rows:
            for pair in pairs:
                hi, lo = (ragas_score(metrics[pair.metric], r) for r in (pair.better, pair.worse))
                values += [hi, lo]
                failures[pair.metric] += (hi is None) + (lo is None)
                agree[pair.metric] += hi is not None and lo is not None and hi > lo
        runs.append(values)
        print(
            f"run {run + 1}: agreement "
            + ", ".join(f"{m} {agree[m]}/{len(rows)}" for m in METRIC_ORDER)
            + "; failures "
            + ", ".join(f"{m} {failures[m]}" for m in METRIC_ORDER),
            flush=True,
        )
    proxy.take()

    # Cost per record on the production path: one record, all three metrics.
    total, start = Usage(), time.perf_counter()
    for pairs in rows:
        rec = pairs[0].better
        for metric in METRIC_ORDER:
            ragas_score(metrics[metric], rec)
        total.add(proxy.take())
    total.seconds = time.perf_counter() - start
    n = max(len(rows), 1)
    print(
        f"ragas cost per record ({len(rows)} records): {total.calls / n:.2f} calls, "
        f"{total.prompt_tokens / n:.0f} prompt + {total.completion_tokens / n:.0f} completion tokens, "
        f"{total.seconds / n:.1f} s"
    )
    if len(runs) > 1:
        by_metric = dict.fromkeys(METRIC_ORDER, 0.0)
        for i, vals in enumerate(zip(*runs, strict=True)):
            got = [v for v in vals if v is not None]
            metric = METRIC_ORDER[(i // 2) % 3]
            if len(got) > 1:
                by_metric[metric] = max(by_metric[metric], max(got) - min(got))
        print("ragas run-to-run max score spread: " + ", ".join(f"{m} {v:.3f}" for m, v in by_metric.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
