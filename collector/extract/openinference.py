"""OpenInference (Arize Phoenix; the LlamaIndex, LangChain, OpenAI, ... instrumentors).

Every span has `openinference.span.kind`. A RAG run is a CHAIN (or AGENT) span over a RETRIEVER
span (`retrieval.documents.<i>.document.content`), optionally a RERANKER span
(`reranker.output_documents.<i>.document.content`) and LLM spans
(`llm.output_messages.<i>.message.content`). Attribute names as in the
openinference-semantic-conventions package (openinference/semconv/trace/__init__.py).

Per RAG run (multispan.answer_units: retrievers and rerankers are the retrievals, LLM spans the
answers): question = the run's root CHAIN's input.value, else the retriever's input.value (or the
reranker query); contexts = the reranker's output documents when there is a reranker, else the
retrievers' documents; answer = the root CHAIN's output.value, else the last LLM output message.
"""

from __future__ import annotations

from typing import Any

from ragpulse.collector.extract.multispan import (
    ANSWER_KEYS,
    QUESTION_KEYS,
    Assembled,
    TraceSpan,
    answer_units,
    by_start,
    indexed,
    pick_text,
    topmost_ancestor,
    unique,
)
from ragpulse.collector.extract.triple import make_triple

SPAN_KIND = "openinference.span.kind"
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"


def wants(span: TraceSpan) -> bool:
    # EMBEDDING spans carry whole vectors and are never read (nor ancestors of what is read).
    return SPAN_KIND in span.attributes and _kind(span) != "EMBEDDING"


def _kind(span: TraceSpan) -> str:
    return str(span.attributes.get(SPAN_KIND, "")).upper()


def _message_text(attrs: dict[str, Any], prefix: str) -> str:
    """The last message's text: `message.content`, or the text parts of a multimodal message
    (`message.contents.<j>.message_content.text`)."""
    messages = indexed(attrs, prefix, "message.content")
    if messages and isinstance(messages[-1], str) and messages[-1].strip():
        return messages[-1].strip()
    count = len(indexed(attrs, prefix, "message.role"))
    if count:
        parts = indexed(attrs, f"{prefix}.{count - 1}.message.contents", "message_content.text")
        return "\n".join(p for p in parts if isinstance(p, str)).strip()
    return ""


def assemble(spans: list[TraceSpan]) -> list[Assembled]:
    runs = answer_units(spans, lambda s: wants(s) and _kind(s) in ("RETRIEVER", "RERANKER"),
                        lambda s: wants(s) and _kind(s) == "LLM")
    return [assembled for run in runs if (assembled := _assemble_run(run.spans)) is not None]


def _assemble_run(spans: list[TraceSpan]) -> Assembled | None:
    ours = by_start(s for s in spans if wants(s))
    retrievers = [s for s in ours if _kind(s) == "RETRIEVER"]
    rerankers = [s for s in ours if _kind(s) == "RERANKER"]
    if not retrievers and not rerankers:
        return None  # no retrieval: not a RAG run (a plain chat, a tool call, ...)
    if rerankers:
        contexts = unique(c for s in rerankers for c in indexed(s.attributes, "reranker.output_documents",
                                                                  "document.content") if isinstance(c, str))
    else:
        contexts = unique(c for s in retrievers for c in indexed(s.attributes, "retrieval.documents",
                                                                   "document.content") if isinstance(c, str))
    retrieval = (retrievers or rerankers)[-1]
    root = topmost_ancestor(retrieval, ours, lambda s: _kind(s) in ("CHAIN", "AGENT"))
    question = pick_text(root.attributes.get(INPUT_VALUE), QUESTION_KEYS) if root else ""
    for source in retrievers:
        question = question or pick_text(source.attributes.get(INPUT_VALUE), QUESTION_KEYS)
    for source in rerankers:
        question = question or pick_text(source.attributes.get("reranker.query"), QUESTION_KEYS)
    answer = pick_text(root.attributes.get(OUTPUT_VALUE), ANSWER_KEYS) if root else ""
    record_span = root
    llms = sorted((s for s in ours if _kind(s) == "LLM"), key=lambda s: s.end_time_unix_nano)
    if not answer and llms:
        record_span = llms[-1]
        answer = _message_text(record_span.attributes, "llm.output_messages")
    if not question or not answer or record_span is None:
        return None
    model = next((str(s.attributes["llm.model_name"]) for s in reversed(llms) if s.attributes.get("llm.model_name")),
                 "")
    return Assembled(make_triple(question, contexts, answer, model, record_span.attributes), record_span)
