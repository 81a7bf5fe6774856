"""A LangChain RAG app instrumented by a real OpenInference or OpenLLMetry instrumentor.

Real LangChain code with no network: an in-memory vector store retriever, a prompt and a fake LLM,
exported by the real OTel SDK over OTLP HTTP. Each run is its own process because instrumentors
patch LangChain globally, and OpenLLMetry's cannot be undone in-process
(opentelemetry-instrumentation-langchain 0.62.4: uninstrument() leaves BaseCallbackManager.__init__
wrapped, so a later run would still export to the first run's tracer provider).

    python tests/support/langchain_app.py {openinference|openllmetry} HOST:PORT {llm|chat|agent} SPEC_JSON

SPEC_JSON: {"service", "question", "answer", "docs"}; for agent {"service", "runs": [{"question",
"answer", "docs"}, ...]}: an agent step (a RunnableLambda) that runs one retrieval chain per run, each
with its own store, in one trace. It prints the span ids (hex) of the agent's child spans, the chains'
roots, in start order.
"""

from __future__ import annotations

import json
import os
import sys
from operator import itemgetter
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, PromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_app import RagApp


def rag_chain(docs: list[str], answer: str, chat: bool) -> Any:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_texts(docs)
    retriever = store.as_retriever(search_kwargs={"k": len(docs)})

    def join(found: list[Any]) -> str:
        return "\n".join(d.page_content for d in found)

    if chat:
        # Dict in, chat message out: the root's output is a serialised AIMessage, not a string.
        prompt = ChatPromptTemplate.from_messages([("system", "Context: {context}"), ("human", "{question}")])
        return ({"context": itemgetter("question") | retriever | join, "question": itemgetter("question")}
                | prompt | FakeListChatModel(responses=[answer]))
    prompt = PromptTemplate.from_template("Context: {context}\nQuestion: {question}\nAnswer:")
    return ({"context": retriever | join, "question": lambda q: q}
            | prompt | FakeListLLM(responses=[answer]) | StrOutputParser())


def agent(runs: list[dict[str, Any]]) -> Any:
    """Several RAG answers in one trace: one chain per run, called in turn by one parent step."""
    chains = [rag_chain(run["docs"], run["answer"], chat=False) for run in runs]

    def answer_all(_: Any) -> str:
        return "\n".join(chain.invoke(run["question"]) for chain, run in zip(chains, runs, strict=True))

    return RunnableLambda(answer_all, name="agent")


def main(convention: str, endpoint: str, mode: str, spec_json: str) -> None:
    spec = json.loads(spec_json)
    if convention == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        instrumentor: Any = LangChainInstrumentor()
    else:
        # OpenLLMetry records prompts and outputs only when asked to.
        os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        instrumentor = LangchainInstrumentor()
    app = RagApp(spec["service"], "http", endpoint)
    seen = InMemorySpanExporter()
    app.provider.add_span_processor(SimpleSpanProcessor(seen))
    instrumentor.instrument(tracer_provider=app.provider)
    if mode == "agent":
        agent(spec["runs"]).invoke("answer every question")
    else:
        chat = mode == "chat"
        chain = rag_chain(spec["docs"], spec["answer"], chat)
        chain.invoke({"question": spec["question"]} if chat else spec["question"])
    app.close()
    spans = seen.get_finished_spans()
    roots = {s.context.span_id for s in spans if s.parent is None}
    children = sorted((s for s in spans if s.parent is not None and s.parent.span_id in roots),
                      key=lambda s: s.start_time or 0)
    print(json.dumps([format(s.context.span_id, "016x") for s in children]))


if __name__ == "__main__":
    main(*sys.argv[1:])
