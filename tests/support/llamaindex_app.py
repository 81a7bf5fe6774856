"""A LlamaIndex query engine with a reranker, instrumented by the real OpenInference instrumentor.

Real LlamaIndex code with no network: a VectorStoreIndex over in-memory nodes with MockEmbedding,
StructuredLLMRerank as the reranker and a fixed-answer LLM written on CustomLLM (the framework's
extension point for custom models), exported by the real OTel SDK over OTLP HTTP. Run as its own
process because the instrumentor hooks LlamaIndex's global dispatcher.

    python tests/support/llamaindex_app.py HOST:PORT SPEC_JSON

SPEC_JSON: {"service", "question", "answer", "docs"}. Prints the reranked contexts as JSON.
With {"service", "runs": [{"question", "answer", "docs"}, ...]} instead: one query engine per run,
each over its own index, queried in turn under one parent span (an agent); prints the span ids (hex)
of the parent's children, the engines' query spans, in start order.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.postprocessor import StructuredLLMRerank
from llama_index.core.schema import TextNode
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_app import RagApp


class FixedLLM(CustomLLM):
    """Answers the reranker's relevance prompt with a ranking (documents 3 and 1 of the batch) and
    every other prompt with the configured answer."""

    answer: str

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="fixed-llm")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        if "relevance" in prompt.lower():
            ranking = {"documents": [{"document_number": 3, "relevance": 9}, {"document_number": 1, "relevance": 7}]}
            return CompletionResponse(text=json.dumps(ranking))
        return CompletionResponse(text=self.answer)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Iterator[CompletionResponse]:
        yield self.complete(prompt, formatted, **kwargs)


def agent(app: RagApp, runs: list[dict[str, Any]]) -> None:
    seen = InMemorySpanExporter()
    app.provider.add_span_processor(SimpleSpanProcessor(seen))
    engines = [VectorStoreIndex([TextNode(text=d) for d in run["docs"]])
               .as_query_engine(similarity_top_k=len(run["docs"]), llm=FixedLLM(answer=run["answer"]))
               for run in runs]
    with app.tracer.start_as_current_span("agent") as parent:
        for engine, run in zip(engines, runs, strict=True):
            engine.query(run["question"])
    app.close()
    parent_id = parent.get_span_context().span_id
    children = sorted((s for s in seen.get_finished_spans() if s.parent is not None and s.parent.span_id == parent_id),
                      key=lambda s: s.start_time or 0)
    print(json.dumps([format(s.context.span_id, "016x") for s in children]))


def main(endpoint: str, spec_json: str) -> None:
    spec = json.loads(spec_json)
    app = RagApp(spec["service"], "http", endpoint)
    LlamaIndexInstrumentor().instrument(tracer_provider=app.provider)
    Settings.embed_model = MockEmbedding(embed_dim=8)
    if "runs" in spec:
        agent(app, spec["runs"])
        return
    Settings.llm = FixedLLM(answer=spec["answer"])
    index = VectorStoreIndex([TextNode(text=d) for d in spec["docs"]])
    reranker = StructuredLLMRerank(top_n=2)
    engine = index.as_query_engine(similarity_top_k=len(spec["docs"]), node_postprocessors=[reranker])
    response = engine.query(spec["question"])
    app.close()
    print(json.dumps([n.node.get_content() for n in response.source_nodes]))


if __name__ == "__main__":
    main(*sys.argv[1:])
