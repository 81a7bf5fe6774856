"""OpenLLMetry (Traceloop: traceloop-sdk decorators and the opentelemetry-instrumentation-* packages).

Shapes, as the sources write them:
- workflow / task / agent spans (`traceloop.span.kind`) carry `traceloop.entity.input` and
  `traceloop.entity.output`, JSON strings: the SDK decorators write {"args": [...], "kwargs": {...}}
  and the return value (traceloop/sdk/decorators/base.py); the LangChain instrumentor writes
  {"inputs": ..., ...} and {"outputs": ..., ...}, and a retriever's output as
  {"documents": [{"page_content", "metadata"}], "count"} (opentelemetry/instrumentation/langchain).
- vector-DB spans (chromadb, qdrant, pinecone, ... instrumentors) add one `db.query.result` event
  per hit, its text in `db.query.result.document` (opentelemetry/instrumentation/chromadb/wrapper.py).
- LLM spans: `gen_ai.prompt.<i>.content` / `gen_ai.completion.<i>.content` (older releases) or the
  GenAI `gen_ai.output.messages` (newer releases).

Per RAG run (multispan.answer_units: spans with documents are the retrievals, spans with a
completion the answers): question = the workflow's input, else the retriever's query; contexts = the
vector-DB results, or the retriever's documents; answer = the workflow's output, else the last LLM
completion.
"""

from __future__ import annotations

from typing import Any

from ragpulse.collector.extract.genai import OUTPUT_MESSAGES, last_message_text
from ragpulse.collector.extract.multispan import (
    ANSWER_KEYS,
    QUESTION_KEYS,
    Assembled,
    TraceSpan,
    answer_units,
    by_start,
    decode_json,
    document_text,
    indexed,
    pick_text,
    topmost_ancestor,
    unique,
)
from ragpulse.collector.extract.triple import make_triple

SPAN_KIND = "traceloop.span.kind"
ENTITY_INPUT = "traceloop.entity.input"
ENTITY_OUTPUT = "traceloop.entity.output"
QUERY_RESULT = "db.query.result"
QUERY_RESULT_DOCUMENT = "db.query.result.document"
_PREFIXES = ("traceloop.", "gen_ai.prompt.", "gen_ai.completion.")


def wants(span: TraceSpan) -> bool:
    # Newer LangChain-instrumentor LLM spans carry only the GenAI message attributes, no traceloop.*.
    attrs = span.attributes
    return (any(k.startswith(_PREFIXES) for k in attrs) or OUTPUT_MESSAGES in attrs
            or any(n == QUERY_RESULT for n, _ in span.events))


def _input_text(value: Any) -> str:
    """The question in an entity input: LangChain's {"inputs": ...}, or the decorated function's
    first string argument, or a question-like keyword argument."""
    value = decode_json(value)
    if not isinstance(value, dict):
        return pick_text(value, QUESTION_KEYS)
    if "inputs" in value:
        return pick_text(value["inputs"], QUESTION_KEYS)
    for arg in value.get("args") or []:
        if text := pick_text(arg, QUESTION_KEYS):
            return text
    return pick_text(value.get("kwargs"), QUESTION_KEYS) or pick_text(value, QUESTION_KEYS)


def _output_text(value: Any) -> str:
    value = decode_json(value)
    if isinstance(value, dict) and "outputs" in value:
        value = value["outputs"]
    return pick_text(value, ANSWER_KEYS)


def _documents(span: TraceSpan) -> list[str] | None:
    """The span's retrieved texts, or None when it is not a retrieval."""
    events = [attrs.get(QUERY_RESULT_DOCUMENT) for name, attrs in span.events if name == QUERY_RESULT]
    if events:
        return [d for d in events if isinstance(d, str)]
    output = decode_json(span.attributes.get(ENTITY_OUTPUT))
    if isinstance(output, dict) and isinstance(output.get("documents"), list):
        return [document_text(d) for d in output["documents"]]
    return None


def _completion(span: TraceSpan) -> str:
    completions = [c for c in indexed(span.attributes, "gen_ai.completion", "content") if isinstance(c, str)]
    if completions and completions[-1].strip():
        return completions[-1].strip()
    return last_message_text(span.attributes.get(OUTPUT_MESSAGES), "assistant")


def assemble(spans: list[TraceSpan]) -> list[Assembled]:
    runs = answer_units(spans, lambda s: wants(s) and _documents(s) is not None,
                        lambda s: wants(s) and bool(_completion(s)))
    # The LangChain instrumentor makes only the outermost runnable a workflow, the chains an agent
    # calls are tasks: in a trace cut into several runs, a run's root is its topmost task.
    roots = ("workflow", "agent") if len(runs) == 1 else ("workflow", "agent", "task")
    return [assembled for run in runs if (assembled := _assemble_run(run.spans, roots)) is not None]


def _assemble_run(spans: list[TraceSpan], roots: tuple[str, ...]) -> Assembled | None:
    ours = by_start(s for s in spans if wants(s))
    retrievals = [(s, docs) for s in ours if (docs := _documents(s)) is not None]
    if not retrievals:
        return None
    contexts = unique(d for _, docs in retrievals for d in docs)
    root = topmost_ancestor(retrievals[-1][0], ours, lambda s: s.attributes.get(SPAN_KIND) in roots)
    question = _input_text(root.attributes.get(ENTITY_INPUT)) if root else ""
    for span, _ in retrievals:
        question = question or _input_text(span.attributes.get(ENTITY_INPUT))
    answer = _output_text(root.attributes.get(ENTITY_OUTPUT)) if root else ""
    record_span = root
    llms = sorted((s for s in ours if _completion(s)), key=lambda s: s.end_time_unix_nano)
    if not answer and llms:
        record_span = llms[-1]
        answer = _completion(record_span)
    if not question or not answer or record_span is None:
        return None
    model = next((str(m) for s in reversed(llms)
                  if (m := s.attributes.get("gen_ai.response.model") or s.attributes.get("gen_ai.request.model"))), "")
    return Assembled(make_triple(question, contexts, answer, model, record_span.attributes), record_span)
