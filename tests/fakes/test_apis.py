"""Each impersonated API answers in its own wire format, from the script.

These talk HTTP to a running `FakeModelServer` without any CLI, so a
format mistake shows up here with a precise message rather than as a CLI
that hangs or exits 1.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fakes.model_server import (
    USAGE,
    FakeModelServer,
    Garbage,
    Hang,
    ModelError,
    OfferedTool,
    Text,
    ToolCall,
    UnofferedCall,
)
from tests.fakes.script import find_tool

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """An HTTP answer as a client sees it."""

    status: int
    content_type: str
    text: str

    def events(self) -> list[JsonObject]:
        """The JSON payloads of the SSE `data:` lines, `[DONE]` excluded."""
        return [
            json.loads(line[len("data: ") :])
            for line in self.text.splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"
        ]


def post(server: FakeModelServer, path: str, body: JsonObject) -> Reply:
    """POST JSON and return the answer, error statuses included."""
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return Reply(answer.status, answer.headers["content-type"], answer.read().decode())
    except urllib.error.HTTPError as error:
        return Reply(error.code, error.headers["content-type"], error.read().decode())


@dataclass(frozen=True)
class Api:
    """How to build a streamed request for one API and read its answer."""

    path: str
    request: Callable[[list[str], int], JsonObject]
    """Body offering these tool names, with this many tool results so far."""
    tool_call: Callable[[Reply], tuple[str, JsonObject]]
    """(called tool name, its arguments) from a tool-call answer."""
    text: Callable[[Reply], str]
    usage: Callable[[Reply], tuple[int, int]]
    """(input tokens, output tokens) reported by the answer."""
    error_message: Callable[[JsonObject], str]


def _anthropic_request(tools: list[str], results: int) -> JsonObject:
    messages: list[JsonObject] = [{"role": "user", "content": "go"}]
    for n in range(results):
        use = {"type": "tool_use", "id": f"t{n}"}
        result = {"type": "tool_result", "tool_use_id": f"t{n}"}
        messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    offered = [{"name": t} for t in tools]
    return {"model": "m", "stream": True, "messages": messages, "tools": offered}


def _anthropic_tool_call(reply: Reply) -> tuple[str, JsonObject]:
    events = reply.events()
    start = next(e for e in events if e["type"] == "content_block_start")["content_block"]
    partial = "".join(
        e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"
    )
    stop = next(e for e in events if e["type"] == "message_delta")["delta"]["stop_reason"]
    assert (start["type"], stop) == ("tool_use", "tool_use")
    return start["name"], json.loads(partial)


def _responses_request(tools: list[str], results: int) -> JsonObject:
    # Codex groups each MCP server's tools in a namespace; mimic that for "mcp__" names.
    grouped: dict[str, list[JsonObject]] = {}
    flat: list[JsonObject] = []
    for tool in tools:
        if tool.startswith("mcp__"):
            namespace, name = tool.rsplit("__", 1)
            grouped.setdefault(namespace, []).append({"type": "function", "name": name})
        else:
            flat.append({"type": "function", "name": tool})
    namespaces = [{"type": "namespace", "name": n, "tools": t} for n, t in grouped.items()]
    outputs = [{"type": "function_call_output", "call_id": f"c{n}"} for n in range(results)]
    return {"model": "m", "stream": True, "input": outputs, "tools": flat + namespaces}


def _responses_tool_call(reply: Reply) -> tuple[str, JsonObject]:
    done = next(e for e in reply.events() if e["type"] == "response.output_item.done")["item"]
    assert done["type"] == "function_call"
    name = f"{done['namespace']}__{done['name']}" if "namespace" in done else done["name"]
    return name, json.loads(done["arguments"])


def _chat_request(tools: list[str], results: int) -> JsonObject:
    messages: list[JsonObject] = [{"role": "user", "content": "go"}]
    messages += [{"role": "tool", "tool_call_id": f"c{n}", "content": "ok"} for n in range(results)]
    offered = [{"type": "function", "function": {"name": t}} for t in tools]
    return {"model": "m", "stream": True, "messages": messages, "tools": offered}


def _chat_tool_call(reply: Reply) -> tuple[str, JsonObject]:
    choices = [c for e in reply.events() for c in e["choices"]]
    call = next(c["delta"]["tool_calls"][0] for c in choices if "tool_calls" in c["delta"])
    assert choices[-1]["finish_reason"] == "tool_calls"
    return call["function"]["name"], json.loads(call["function"]["arguments"])


def _gemini_request(tools: list[str], results: int) -> JsonObject:
    contents: list[JsonObject] = [{"role": "user", "parts": [{"text": "go"}]}]
    contents += [{"role": "user", "parts": [{"functionResponse": {}}]} for _ in range(results)]
    declarations = [{"name": t} for t in tools]
    return {"contents": contents, "tools": [{"functionDeclarations": declarations}]}


def _gemini_parts(reply: Reply) -> list[JsonObject]:
    return [p for e in reply.events() for c in e["candidates"] for p in c["content"]["parts"]]


def _gemini_tool_call(reply: Reply) -> tuple[str, JsonObject]:
    call = next(p["functionCall"] for p in _gemini_parts(reply) if "functionCall" in p)
    return call["name"], call["args"]


def _last_usage(reply: Reply, key: str) -> JsonObject:
    return [e[key] for e in reply.events() if e.get(key)][-1]


APIS = {
    "anthropic": Api(
        "/v1/messages?beta=true",
        _anthropic_request,
        _anthropic_tool_call,
        lambda r: "".join(
            e["delta"]["text"] for e in r.events() if e["type"] == "content_block_delta"
        ),
        lambda r: (
            (u := _last_usage(r, "usage"))["input_tokens"],
            u["output_tokens"],
        ),
        lambda body: body["error"]["message"],
    ),
    "openai-responses": Api(
        "/v1/responses",
        _responses_request,
        _responses_tool_call,
        lambda r: "".join(e["delta"] for e in r.events() if e["type"].endswith("text.delta")),
        lambda r: (
            (u := r.events()[-1]["response"]["usage"])["input_tokens"],
            u["output_tokens"],
        ),
        lambda body: body["error"]["message"],
    ),
    "openai-chat": Api(
        "/v1/chat/completions",
        _chat_request,
        _chat_tool_call,
        lambda r: "".join(
            c["delta"].get("content") or "" for e in r.events() for c in e["choices"]
        ),
        lambda r: (
            (u := _last_usage(r, "usage"))["prompt_tokens"],
            u["completion_tokens"],
        ),
        lambda body: body["error"]["message"],
    ),
    "gemini": Api(
        "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
        _gemini_request,
        _gemini_tool_call,
        lambda r: "".join(p.get("text", "") for p in _gemini_parts(r)),
        lambda r: (
            (u := _last_usage(r, "usageMetadata"))["promptTokenCount"],
            u["candidatesTokenCount"],
        ),
        lambda body: body["error"]["message"],
    ),
}

# How each CLI prefixes an MCP tool, so the base-name match is tested on real shapes.
OFFERED = {
    "anthropic": ["Bash", "mcp__probe__state_get", "mcp__probe__state_set"],
    "openai-responses": ["exec_command", "mcp__probe__state_get", "mcp__probe__state_set"],
    "openai-chat": ["bash", "probe_state_get", "probe-state_set"],
    "gemini": ["read_file", "mcp_probe_state_get", "mcp_probe_state_set"],
}
EXPECTED_NAME = {
    "anthropic": "mcp__probe__state_set",
    "openai-responses": "mcp__probe__state_set",  # namespace "mcp__probe", tool "state_set"
    "openai-chat": "probe-state_set",
    "gemini": "mcp_probe_state_set",
}


@pytest.fixture(params=sorted(APIS))
def api_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_tool_call_names_the_offered_tool(fake_model: FakeModelServer, api_name: str) -> None:
    api = APIS[api_name]
    fake_model.script = [ToolCall("state_set", {"key": "k", "value": "v"}), Text("done")]

    reply = post(fake_model, api.path, api.request(OFFERED[api_name], 0))

    assert reply.status == 200
    assert reply.content_type.startswith("text/event-stream")
    assert api.tool_call(reply) == (EXPECTED_NAME[api_name], {"key": "k", "value": "v"})
    assert api.usage(reply) == (USAGE.input_tokens, USAGE.output_tokens)
    assert [(r.api, r.body) for r in fake_model.requests] == [
        (api_name, api.request(OFFERED[api_name], 0))
    ]


def test_step_is_chosen_by_tool_results_so_far(fake_model: FakeModelServer, api_name: str) -> None:
    api = APIS[api_name]
    fake_model.script = [ToolCall("state_set"), Text("second"), Text("last")]
    offered = OFFERED[api_name]

    texts = [api.text(post(fake_model, api.path, api.request(offered, n))) for n in (1, 1, 2, 7)]

    # A retry (same request twice) gets the same answer; past the end, the last step.
    assert texts == ["second", "second", "last", "last"]


def test_unoffered_tool_is_explained_in_text(fake_model: FakeModelServer, api_name: str) -> None:
    api = APIS[api_name]
    fake_model.script = [ToolCall("no_such_tool")]

    text = api.text(post(fake_model, api.path, api.request(OFFERED[api_name], 0)))

    assert "no offered tool matches 'no_such_tool'" in text
    assert "state_set" in text  # the offered tools are listed


#: The call a model inventing a tool of the same server makes, named like `state_set`.
INVENTED_NAME = {
    "anthropic": "mcp__probe__no_such_tool",
    "openai-responses": "mcp__probe__no_such_tool",
    "openai-chat": "probe-no_such_tool",
    "gemini": "mcp_probe_no_such_tool",
}


def test_an_unoffered_call_is_named_like_an_offered_tool(
    fake_model: FakeModelServer, api_name: str
) -> None:
    api = APIS[api_name]
    fake_model.script = [UnofferedCall("no_such_tool", args={"key": "k"})]

    reply = post(fake_model, api.path, api.request(OFFERED[api_name], 0))

    assert api.tool_call(reply) == (INVENTED_NAME[api_name], {"key": "k"})


def test_model_error_uses_the_api_error_shape(fake_model: FakeModelServer, api_name: str) -> None:
    api = APIS[api_name]
    fake_model.script = [ModelError(429, "slow down")]

    reply = post(fake_model, api.path, api.request([], 0))

    assert reply.status == 429
    assert api.error_message(json.loads(reply.text)) == "slow down"


def test_garbage_is_not_a_parsable_answer(fake_model: FakeModelServer, api_name: str) -> None:
    api = APIS[api_name]
    fake_model.script = [Garbage()]

    reply = post(fake_model, api.path, api.request([], 0))

    assert reply.status == 200
    assert reply.events() == []
    with pytest.raises(ValueError):
        json.loads(reply.text)


def test_anthropic_answers_unstreamed_requests(fake_model: FakeModelServer) -> None:
    fake_model.script = [Text("a title")]
    body = {**_anthropic_request([], 0), "stream": False}

    message = json.loads(post(fake_model, "/v1/messages", body).text)

    assert message["content"] == [{"type": "text", "text": "a title"}]
    assert message["stop_reason"] == "end_turn"
    assert message["usage"]["cache_read_input_tokens"] == USAGE.cache_read_tokens


def test_side_requests_bypass_the_script(fake_model: FakeModelServer) -> None:
    fake_model.script = [Hang()]  # an agent turn would never be answered
    router = {
        "contents": [{"role": "user", "parts": [{"text": "score this"}]}],
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseJsonSchema": {
                "type": "OBJECT",
                "properties": {
                    "complexity_reasoning": {"type": "STRING"},
                    "complexity_score": {"type": "INTEGER"},
                },
            },
        },
    }

    routed = post(fake_model, "/v1beta/models/flash-lite:generateContent", router)
    counted = post(fake_model, "/v1/messages/count_tokens", _anthropic_request([], 0))

    answer = json.loads(routed.text)["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(answer) == {"complexity_reasoning": "fake", "complexity_score": 1}
    assert json.loads(counted.text) == {"input_tokens": USAGE.input_tokens}


def test_unknown_paths_are_404_and_recorded(fake_model: FakeModelServer) -> None:
    head = urllib.request.Request(fake_model.url + "/", method="HEAD")
    with pytest.raises(urllib.error.HTTPError) as preconnect:
        urllib.request.urlopen(head, timeout=10)

    reply = post(fake_model, "/v2/whatever", {"x": 1})

    assert (preconnect.value.code, reply.status) == (404, 404)
    assert [tuple(r) for r in fake_model.requests] == [("unknown", "/v2/whatever", {"x": 1})]


def test_reset_forgets_requests_and_script(fake_model: FakeModelServer) -> None:
    fake_model.script = [Text("scripted")]
    post(fake_model, "/v1/chat/completions", _chat_request([], 0))

    fake_model.reset()
    reply = post(fake_model, "/v1/chat/completions", _chat_request([], 0))

    assert APIS["openai-chat"].text(reply) == "ok"
    assert len(fake_model.requests) == len(fake_model.headers) == 1


def test_tool_match_needs_a_separator_and_prefers_the_least_prefix() -> None:
    offered = [OfferedTool("reset"), OfferedTool("probe_state_set"), OfferedTool("probe-set")]

    assert find_tool(offered, "set") == OfferedTool("probe-set")
    assert find_tool(offered[:1], "set") is None
