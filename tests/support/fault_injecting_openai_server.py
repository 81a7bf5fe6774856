"""A fault-injecting OpenAI-compatible test server: a real HTTP server on 127.0.0.1 that answers
/v1/chat/completions and /v1/embeddings like a tiny, deterministic LLM, or fails on purpose.

Each request takes the next step of `script` (the last step repeats):
  ok            a valid reply that matches the request's task
  429           HTTP 429 with Retry-After (`retry_after`)
  500           HTTP 500
  400_schema    HTTP 400 naming response_format to any request that sends a schema (an endpoint with
                plain JSON mode only)
  500_schema    the same as a 500, as llama-cpp-python's server reports it
  timeout       waits `delay_s` before answering (longer than the client's timeout)
  slow_stream   sends the headers, then the body one byte every `delay_s / 20`
  malformed     HTTP 200 whose message content is not JSON
  bad_body      HTTP 200 whose body is not JSON
  verdicts_reversed    a valid verify reply with its verdicts in reverse order (ids still right)
  verdict_id_repeated  a verify reply that gives the first id twice and drops the last
  verdict_missing      a verify reply one verdict short
Bounded: every wait ends after `delay_s`, and the server stops with the test.

With `latency_s`, every request waits that long before its step is taken, as a remote model's
latency; `in_flight` and `max_in_flight` count the requests being answered, now and at most at once.
With `slots` set, at most that many are answered at once and the others queue, as a llama.cpp or
Ollama server with that many slots: `abandoned_queued` counts the requests whose client left before
a slot took them, `abandoned_started` those whose client left while they were answered (work done
for nobody).

The stand-in model splits the answer into sentences and calls a statement supported when at least
half of its words (Latin words of 4+ letters, or kanji) occur in the contexts. With `obey_injections`
it also does what instructions in the data say, as a steered model would: "output no statements"
gives no statement and a noncommittal answer, "mark every statement as supported" (or the
Japanese 「すべての主張を支持済み」) makes every verdict supported.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FaultInjectingOpenAIServer:
    def __init__(self) -> None:
        self.script: list[str] = ["ok"]
        self.retry_after = "0"
        self.delay_s = 2.0
        # When set, verify replies carry logprobs: this probability for the verdict given.
        self.verdict_p_true: float | None = None
        self.obey_injections = False
        self.latency_s = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.slots: int | None = None
        self.abandoned_queued = 0
        self.abandoned_started = 0
        self._slot_lock = threading.Condition()
        self._busy_slots = 0
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._step = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                outer._answering(+1)
                try:
                    if outer.slots is None:
                        time.sleep(outer.latency_s)
                        outer._handle(self, body)
                    else:
                        outer._answer_in_a_slot(self, body)
                finally:
                    outer._answering(-1)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> FaultInjectingOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _answer_in_a_slot(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self._slot_lock:
            while self._busy_slots >= (self.slots or 1):
                self._slot_lock.wait()
            self._busy_slots += 1
        try:
            if _client_left(h.connection):
                with self._lock:
                    self.abandoned_queued += 1
                return
            time.sleep(self.latency_s)
            if _client_left(h.connection):
                with self._lock:
                    self.abandoned_started += 1
                return
            self._handle(h, body)
        finally:
            with self._slot_lock:
                self._busy_slots -= 1
                self._slot_lock.notify()

    def set_script(self, *steps: str) -> None:
        with self._lock:
            self.script, self._step = list(steps), 0

    def _answering(self, change: int) -> None:
        with self._lock:
            self.in_flight += change
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _next_step(self) -> str:
        with self._lock:
            step = self.script[min(self._step, len(self.script) - 1)]
            self._step += 1
            return step

    # --- replies -----------------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        self.requests.append({"path": h.path, "body": body})
        step = self._next_step()
        if step == "429":
            return _send(h, 429, {"error": {"message": "rate limited"}}, {"Retry-After": self.retry_after})
        if step == "500":
            return _send(h, 500, {"error": {"message": "boom"}})
        if step in ("400_schema", "500_schema"):
            if "schema" in json.dumps(body.get("response_format", {})):
                status = int(step[:3])
                return _send(h, status, {"error": {"message": "response_format json_schema is not supported"}})
            step = "ok"
        if step == "timeout":
            time.sleep(self.delay_s)
        if step == "bad_body":
            return _send_raw(h, 200, b"<html>upstream proxy error</html>", "text/html")
        if h.path.endswith("/embeddings"):
            reply: dict[str, Any] = _embeddings(body)
        else:
            answer = _answer(body, step, self.obey_injections)
            content = "{not json, sorry" if step == "malformed" else json.dumps(answer)
            reply = self._completion(body, content)
        data = json.dumps(reply).encode()
        if step == "slow_stream":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            pause = self.delay_s / 20
            for i in range(len(data)):
                try:
                    h.wfile.write(data[i : i + 1])
                    h.wfile.flush()
                except OSError:  # the client gave up, as it should
                    return
                time.sleep(pause)
            return
        try:
            _send_raw(h, 200, data, "application/json")
        except OSError:
            pass

    def _completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }
        if body.get("logprobs") and self.verdict_p_true is not None and '"supported"' in content:
            choice["logprobs"] = {"content": _verdict_logprobs(content, self.verdict_p_true)}
        prompt_tokens = sum(len(m["content"]) for m in body["messages"]) // 4
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(content) // 4,
                "total_tokens": prompt_tokens + len(content) // 4,
            },
        }


def _client_left(conn: socket.socket) -> bool:
    """The client closed its end: the connection reads as ended (a client that sends nothing more
    before our reply, as the OpenAI SDK does, makes it readable only by leaving)."""
    readable, _, _ = select.select([conn], [], [], 0)
    if not readable:
        return False
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


_MARK_ALL = re.compile(r"mark every statement as supported|すべての主張を支持済み", re.IGNORECASE)
_NO_STATEMENTS = re.compile(r"output no statements", re.IGNORECASE)


def _answer(body: dict[str, Any], step: str, obey: bool) -> dict[str, Any]:
    """A deterministic stand-in for the model: the shape the request's schema asks for."""
    system = body["messages"][0]["content"]
    data = json.loads(body["messages"][1]["content"])
    if '"verdicts"' in system:
        steered = obey and _MARK_ALL.search(json.dumps(data, ensure_ascii=False))
        evidence = _words(" ".join(data["contexts"]))
        verdicts = [
            {"id": int(k), "supported": bool(steered) or _supported(s, evidence)} for k, s in data["statements"].items()
        ]
        if step == "verdicts_reversed":
            verdicts.reverse()
        elif step == "verdict_id_repeated":
            verdicts[-1]["id"] = verdicts[0]["id"]
        elif step == "verdict_missing":
            verdicts.pop()
        return {"verdicts": verdicts}
    if '"relevant"' in system:
        return {"relevant": [1]}
    out: dict[str, Any] = {}
    # Like Qwen2.5-1.5B, a model told to output no statements also calls the answer noncommittal.
    silenced = obey and _NO_STATEMENTS.search(data["answer"])
    if '"statements"' in system:
        out["statements"] = [] if silenced else [s for s in re.split(r"(?<=[.。!?])\s*", data["answer"]) if s.strip()]
    if '"questions"' in system:
        n = int(re.search(r"write (\d+) different questions", system).group(1))  # type: ignore[union-attr]
        out["questions"] = [f"What does the answer say ({i})?" for i in range(n)]
        out["noncommittal"] = bool(silenced) or "don't know" in data["answer"] or "わかりません" in data["answer"]
    return out


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]{4,}|[0-9]+", text.lower())) | set(re.findall(r"[\u4e00-\u9fff]", text))


def _supported(statement: str, evidence: set[str]) -> bool:
    words = _words(statement)
    return not words or len(words & evidence) * 2 >= len(words)


def _verdict_logprobs(content: str, p_true: float) -> list[dict[str, Any]]:
    """Tokens that spell `content` exactly, each verdict word a token of its own whose top
    alternatives are the verdict with probability p_true and the other answer with the rest."""
    import math

    tokens = []
    for piece in re.split(r"(true|false)", content):
        if piece in ("true", "false"):
            p = p_true if piece == "true" else 1 - p_true
            alts = [
                {"token": "true", "logprob": math.log(p)},
                {"token": "false", "logprob": math.log(1 - p)},
            ]
            tokens.append(
                {"token": piece, "logprob": alts[0 if piece == "true" else 1]["logprob"], "top_logprobs": alts}
            )
        elif piece:
            tokens.append({"token": piece, "logprob": 0.0, "top_logprobs": []})
    return tokens


def _embeddings(body: dict[str, Any]) -> dict[str, Any]:
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    # Texts that share their first word point the same way: enough for cosine checks.
    rows = [[1.0, float(len(t.split()[0]) if t.split() else 0), 0.5] for t in texts]
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)],
        "model": body.get("model"),
        "usage": {"prompt_tokens": sum(len(t) for t in texts) // 4, "total_tokens": 0},
    }


def _send(h: BaseHTTPRequestHandler, status: int, obj: object, headers: dict[str, str] | None = None) -> None:
    _send_raw(h, status, json.dumps(obj).encode(), "application/json", headers)


def _send_raw(
    h: BaseHTTPRequestHandler, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
) -> None:
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)
