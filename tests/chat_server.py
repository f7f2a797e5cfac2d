"""A real local HTTP server speaking the OpenAI chat-completions API, scripted per test.

It runs on 127.0.0.1 with a random port in a thread. Every request is recorded. What it answers is decided,
in order, by: `rules` (a predicate on the request → a behaviour, for "this segment always fails"), then the
`queue` (one behaviour per request, for "429 then success"), then the default responder, which builds a
valid `SegmentExtraction` from the prompt (one entity per person message, quoting its first words, and a
Frustration reaction when a message says "frustrated"). It rejects requests whose `response_format` is not
a strict JSON schema, as the real service does; a request with `tools` must give strict function schemas
instead and is answered with a tool call (`Reply.tool_call`), or refused like an endpoint without tool calls
when `tools_supported` is off. With `dialect = "llama_cpp"` it speaks as llama.cpp's Python server does:
`json_schema` is refused with HTTP 500 ("Input should be 'text' or 'json_object'"), `{"type":
"json_object", "schema": …}` is what it takes.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from memory_core.ontology.strict import schema_problems


@dataclass
class Reply:
    status: int = 200
    content: str | None = None  # assistant message content; None → built by the responder
    body: bytes | None = None  # raw HTTP body (overrides everything)
    headers: dict = field(default_factory=dict)
    delay_s: float = 0.0
    refusal: str | None = None
    finish_reason: str = "stop"
    error_message: str = ""
    tool_call: tuple[str, dict] | None = None  # (function name, arguments): answer with a tool call


Behaviour = Callable[[dict], Reply]


def ok(content: str | None = None, delay_s: float = 0.0) -> Behaviour:
    return lambda req: Reply(content=content, delay_s=delay_s)


def status(code: int, message: str = "scripted failure", **headers) -> Behaviour:
    return lambda req: Reply(
        status=code, error_message=message, headers={k.replace("_", "-"): v for k, v in headers.items()}
    )


def slow(delay_s: float) -> Behaviour:
    return lambda req: Reply(delay_s=delay_s)


def raw_body(data: bytes) -> Behaviour:
    return lambda req: Reply(body=data)


def refusal(text: str = "I can't help with that.") -> Behaviour:
    return lambda req: Reply(refusal=text)


_MESSAGE = re.compile(
    r'<message ref="(m\d+)" speaker="([^"]*)" kind="(person|assistant)" time="[^"]*">\n(.*?)\n</message>',
    re.S,
)


def default_answer(request: dict) -> str:
    """A valid extraction for the segment in the request's user message."""
    user = next((m["content"] for m in request["messages"] if m["role"] == "user"), "")
    concepts, reactions = [], []
    for ref, speaker, kind, text in _MESSAGE.findall(user):
        if kind != "person" or not text.strip():
            continue
        words = text.split()
        quote = " ".join(words[:3])
        start = text.index(quote)
        concepts.append(
            {
                "title": quote,
                "type": "entity",
                "description": f"{speaker} said: {text[:80]}",
                "aliases": [],
                "confidence": 0.8,
                "evidence": [
                    {"message_ref": ref, "quote": quote, "char_start": start, "char_end": start + len(quote)}
                ],
                "relations": [],
                "claims": [],
            }
        )
        if "frustrated" in text:
            reactions.append(
                {
                    "reaction": {
                        "state": "Frustration",
                        "state_raw": "",
                        "intensity": 0.8,
                        "valence": "negative",
                        "epistemic_status": "explicit",
                        "evidence_message_id": ref,
                    },
                    "cue": "frustrated",
                }
            )
    return json.dumps({"concepts": concepts, "reactions": reactions})


class ChatServer:
    def __init__(self):
        self.queue: list[Behaviour] = []
        self.rules: list[tuple[Callable[[dict], bool], Behaviour]] = []
        self.requests: list[dict] = []  # every request body, in arrival order
        self.tools_supported = True  # off: a request with tools is refused (an endpoint without tool calls)
        self.dialect = "openai"  # openai | llama_cpp: which response_format it accepts
        self.answered: list[dict] = []  # requests that got a 200 completion (the ones that cost tokens)
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                request["_path"] = self.path
                request["_auth"] = self.headers.get("authorization", "")
                reply = server._decide(request)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self._send(request, reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): exactly what a real server sees

            def _send(self, request: dict, reply: Reply):
                if reply.body is not None:
                    return self._write(200, reply.body, reply.headers)
                problem = server._check(request)
                if problem:
                    code = 500 if problem.startswith("Input should be") else 400  # llama.cpp's validation
                    return self._write(
                        code,
                        json.dumps({"error": {"message": problem, "type": "invalid_request_error"}}).encode(),
                    )
                if reply.status != 200:
                    body = {
                        "error": {"message": reply.error_message, "type": "scripted", "code": reply.status}
                    }
                    return self._write(reply.status, json.dumps(body).encode(), reply.headers)
                content = reply.content if reply.content is not None else default_answer(request)
                message = {
                    "role": "assistant",
                    "content": None if reply.refusal else content,
                    "refusal": reply.refusal,
                }
                finish = reply.finish_reason
                if reply.tool_call is not None:
                    name, arguments = reply.tool_call
                    function = {"name": name, "arguments": json.dumps(arguments)}
                    message = {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": f"call_{len(server.requests)}", "type": "function", "function": function}
                        ],
                    }
                    content, finish = function["arguments"], "tool_calls"
                prompt_chars = sum(len(str(m.get("content") or "")) for m in request["messages"])
                completion = {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": request.get("model", "test-model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {
                        "prompt_tokens": prompt_chars // 4,
                        "completion_tokens": len(content or "") // 4,
                        "total_tokens": prompt_chars // 4 + len(content or "") // 4,
                    },
                }
                with server._lock:
                    server.answered.append(request)
                return self._write(200, json.dumps(completion).encode())

            def _write(self, code: int, body: bytes, headers: dict | None = None):
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def _decide(self, request: dict) -> Reply:
        with self._lock:
            self.requests.append(request)
            for predicate, behaviour in self.rules:
                if predicate(request):
                    return behaviour(request)
            if self.queue:
                return self.queue.pop(0)(request)
        return Reply()

    def _check(self, request: dict) -> str:
        if request.get("_path") != "/v1/chat/completions":
            return f"unknown path {request.get('_path')}"
        if request.get("tools"):
            if not self.tools_supported:
                return "tools are not supported by this model"
            for tool in request["tools"]:
                function = tool.get("function", {})
                if tool.get("type") != "function" or not function.get("strict"):
                    return "tools must be strict functions"
                problems = schema_problems(function.get("parameters", {}), function.get("name", "tool"))
                if problems:
                    return "Invalid schema for function: " + "; ".join(problems[:3])
            return ""
        fmt = request.get("response_format") or {}
        if self.dialect == "llama_cpp":
            if fmt.get("type") != "json_object":
                return "Input should be 'text' or 'json_object'"
            if not isinstance(fmt.get("schema"), dict):
                return "json_object without a schema: the answer would not be grammar-constrained"
            problems = schema_problems(fmt["schema"], "schema")
            return "Invalid schema for response_format: " + "; ".join(problems[:3]) if problems else ""
        if fmt.get("type") != "json_schema" or not fmt.get("json_schema", {}).get("strict"):
            return "response_format must be a strict json_schema"
        problems = schema_problems(fmt["json_schema"]["schema"], fmt["json_schema"].get("name", "schema"))
        if problems:
            return "Invalid schema for response_format: " + "; ".join(problems[:3])
        return ""

    def user_text(self, request: dict) -> str:
        return next((m["content"] for m in request["messages"] if m["role"] == "user"), "")

    def start(self) -> ChatServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
