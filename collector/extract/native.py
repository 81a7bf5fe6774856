"""The native convention: rag.question, rag.contexts, rag.answer on one span (plain OTel SDK apps)."""

from __future__ import annotations

from typing import Any

from ragpulse.collector.extract.triple import READS, ExtractRejection, Triple, make_triple, string_list

QUESTION = "rag.question"
CONTEXTS = "rag.contexts"
ANSWER = "rag.answer"
MODEL = "rag.model"
# Every attribute extract_native reads: the pipeline decodes only these of a span's attributes.
NATIVE_READS = frozenset({QUESTION, CONTEXTS, ANSWER, MODEL, "gen_ai.request.model", *READS})


def extract_native(attrs: dict[str, Any]) -> Triple | None:
    if QUESTION not in attrs or CONTEXTS not in attrs or ANSWER not in attrs:
        present = [k for k in (QUESTION, CONTEXTS, ANSWER) if k in attrs]
        if not present:
            return None
        missing = [k for k in (QUESTION, CONTEXTS, ANSWER) if k not in attrs]
        raise ExtractRejection("incomplete_triple", f"span has {', '.join(present)} but lacks {', '.join(missing)}")
    question, answer = attrs[QUESTION], attrs[ANSWER]
    if not isinstance(question, str) or not question.strip():
        raise ExtractRejection("empty_question", f"{QUESTION} must be a non-empty string")
    if not isinstance(answer, str) or not answer.strip():
        raise ExtractRejection("empty_answer", f"{ANSWER} must be a non-empty string")
    contexts = string_list(attrs[CONTEXTS], CONTEXTS)
    model = str(attrs.get(MODEL) or attrs.get("gen_ai.request.model") or "")
    return make_triple(question, contexts, answer, model, attrs)
