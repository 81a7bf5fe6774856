"""A stand-in for `openai.OpenAI` that answers chat completions from a Python function, in process:
enough of the client for the openai judge's transport (with_streaming_response.create, iter_bytes).

`reply(system, data)` gets the system prompt and the user message's JSON data and returns the
reply's content (a dict is sent as JSON, a string as written). Every request is kept in `requests`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

Reply = Callable[[str, dict[str, Any]], "dict[str, Any] | str"]


class ScriptedChatClient:
    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(
            with_streaming_response=SimpleNamespace(create=self._create)))

    @contextmanager
    def _create(self, **kwargs: Any) -> Iterator[SimpleNamespace]:
        self.requests.append(kwargs)
        messages = kwargs["messages"]
        content = self.reply(messages[0]["content"], json.loads(messages[1]["content"]))
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
        data = json.dumps(body).encode()
        yield SimpleNamespace(iter_bytes=lambda: iter([data]))
