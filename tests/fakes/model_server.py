"""A scripted fake of the model APIs, so the genuine agent CLIs run offline.

    server = FakeModelServer().start()
    server.script = [ToolCall("state_set", {"key": "k", "value": "v"}), Text("Done.")]
    ... point a CLI at server.url, run it ...
    server.requests  # [(api, path, body), ...]
    server.stop()

The server runs uvicorn in a background thread with its own event loop, so
synchronous and asynchronous tests can share it. One server answers every
API at once (Anthropic Messages, OpenAI Responses, OpenAI chat completions,
Gemini); the path says which one a request speaks.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gzip
import json
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, NamedTuple, Self

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.apis.anthropic import AnthropicMessages
from tests.fakes.apis.base import ModelApi
from tests.fakes.apis.gemini import Gemini
from tests.fakes.apis.openai_chat import OpenAIChat
from tests.fakes.apis.openai_responses import OpenAIResponses
from tests.fakes.script import (
    USAGE,
    Garbage,
    Hang,
    ModelError,
    OfferedTool,
    Step,
    Text,
    ToolCall,
    UnofferedCall,
    Usage,
    choose_step,
    find_tool,
    no_such_tool_text,
    unoffered_tool,
)
from tests.fakes.threaded_server import ThreadedServer

__all__ = [
    "USAGE",
    "FakeModelServer",
    "Garbage",
    "Hang",
    "ModelError",
    "OfferedTool",
    "RecordedRequest",
    "Step",
    "Text",
    "ToolCall",
    "UnofferedCall",
    "Usage",
]

Endpoint = Callable[[Request], Awaitable[Response]]


class RecordedRequest(NamedTuple):
    """One request the server received: which API, which path, the JSON body.

    `body` is the parsed JSON, the raw text when the body is not JSON, or
    None when there is no body.
    """

    api: str
    path: str
    body: Any


class FakeModelServer:
    """Serve every model API on 127.0.0.1 from one script, in a background thread.

    Attributes:
        requests: every request received, in arrival order (HEAD excluded);
            paths nobody serves are recorded under the api name "unknown".
        headers: the headers of each entry of `requests`, at the same index,
            so credential-isolation tests can see which key reached the model.
    """

    def __init__(self, script: Sequence[Step] | None = None, host: str = "127.0.0.1") -> None:
        self.requests: list[RecordedRequest] = []
        self.headers: list[dict[str, str]] = []
        self._script: list[Step] = [Text("ok")]
        if script is not None:
            self.script = script
        self._loop: asyncio.AbstractEventLoop | None = None
        # Set from the server's own loop; hung requests wait on it.
        self._hang_release: asyncio.Event | None = None
        self._http = ThreadedServer(self._build_app(), "fake-model-server", host)

    # -- script -----------------------------------------------------------

    @property
    def script(self) -> list[Step]:
        """The steps that answer agent turns (see `tests.fakes.script`)."""
        return self._script

    @script.setter
    def script(self, steps: Sequence[Step]) -> None:
        if not steps:
            raise ValueError("a script needs at least one step")
        # Replacing the list, never mutating it, keeps the server thread's
        # reads consistent without a lock.
        self._script = list(steps)

    def reset(self) -> None:
        """Forget recorded requests, restore the script `[Text("ok")]`, free hung requests."""
        self.requests.clear()
        self.headers.clear()
        self._script = [Text("ok")]
        self._call_in_loop(self._release_hangs)

    # -- lifecycle --------------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL, e.g. "http://127.0.0.1:40123" (no trailing slash)."""
        if not self._http.running:
            raise RuntimeError("FakeModelServer is not started")
        return f"http://{self._http.host}:{self._http.port}"

    def start(self) -> Self:
        """Bind a free port and serve until `stop()`; returns self once accepting."""
        self._http.start()
        return self

    def stop(self) -> None:
        """Free hung requests, then shut the server down. Idempotent."""
        self._call_in_loop(self._release_hangs)
        self._http.stop()
        self._loop = None
        self._hang_release = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- serving ----------------------------------------------------------

    def _build_app(self) -> Starlette:
        routes = [
            Route(path, self._endpoint(api), methods=["POST"])
            for api in (AnthropicMessages(), OpenAIResponses(), OpenAIChat(), Gemini())
            for path in api.paths
        ]
        routes += [
            Route("/v1/models", self._list_models, methods=["GET"]),
            Route("/models", self._list_models, methods=["GET"]),
            Route("/{path:path}", self._unknown, methods=["GET", "POST", "PUT", "DELETE", "HEAD"]),
        ]
        return Starlette(routes=routes, lifespan=self._lifespan)

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self._loop = asyncio.get_running_loop()
        self._hang_release = asyncio.Event()
        yield

    def _endpoint(self, api: ModelApi) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            return await self._answer(api, request)

        return endpoint

    async def _answer(self, api: ModelApi, request: Request) -> Response:
        path = request.url.path
        body = await self._record(api.name, request)
        if not isinstance(body, dict):
            return api.error(400, "[fake model] request body is not a JSON object")
        side = api.side_reply(path, body)
        if side is not None:
            return side
        step = choose_step(self._script, api.tool_results(body))
        match step:
            case Text(text=text):
                return api.text(path, body, text)
            case ToolCall(tool=base_name, args=args):
                offered = api.offered_tools(body)
                tool = find_tool(offered, base_name)
                if tool is None:
                    return api.text(path, body, no_such_tool_text(base_name, offered))
                return api.tool_call(path, body, tool, args)
            case UnofferedCall(like=like, args=args):
                offered = api.offered_tools(body)
                invented = unoffered_tool(offered, step)
                if invented is None:
                    return api.text(path, body, no_such_tool_text(like, offered))
                return api.tool_call(path, body, invented, args)
            case ModelError(status=status, message=message):
                return api.error(status, message)
            case Garbage():
                return api.garbage(path, body)
            case Hang():
                await self._wait_for_release()
                return api.error(503, "[fake model] server stopped while hanging")
        raise TypeError(f"not a script step: {step!r}")

    async def _list_models(self, request: Request) -> Response:
        await self._record("models", request)
        model = {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}
        return JSONResponse({"object": "list", "data": [model]})

    async def _unknown(self, request: Request) -> Response:
        if request.method != "HEAD":
            await self._record("unknown", request)
        return JSONResponse({"error": {"message": "not found"}}, status_code=404)

    async def _record(self, api: str, request: Request) -> Any:
        body = _decode_body(await request.body(), request.headers.get("content-encoding", ""))
        self.requests.append(RecordedRequest(api, request.url.path, body))
        self.headers.append(dict(request.headers))
        return body

    # -- hanging ----------------------------------------------------------

    async def _wait_for_release(self) -> None:
        release = self._hang_release
        if release is not None:
            await release.wait()

    def _release_hangs(self) -> None:
        # Runs in the server loop: wake every hung request, arm a fresh event
        # for the ones that come later.
        if self._hang_release is not None:
            self._hang_release.set()
        self._hang_release = asyncio.Event()

    def _call_in_loop(self, callback: Callable[[], None]) -> None:
        # Waits for the callback, so that once reset() returns a new Hang
        # step cannot be released by the previous test's release.
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        async def call() -> None:
            callback()

        try:
            asyncio.run_coroutine_threadsafe(call(), loop).result(timeout=5)
        except (RuntimeError, concurrent.futures.TimeoutError):
            pass  # the loop is closing: nothing is left to release


def _decode_body(raw: bytes, encoding: str) -> Any:
    """Undo transport compression and parse JSON; fall back to the text."""
    if not raw:
        return None
    encoding = encoding.strip().lower()
    if encoding == "gzip":
        raw = gzip.decompress(raw)
    elif encoding == "deflate":
        raw = zlib.decompress(raw)
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text
