"""A fake OpenAI-compatible speech-to-text API: ``POST /v1/audio/transcriptions``.

It speaks the part of OpenAI's Audio API a client of transcriptions uses: a
``multipart/form-data`` request with ``file`` (the audio, with its name and
type) and ``model`` (and ``response_format``), a bearer key in
``Authorization``; the answer ``{"text": ...}`` for ``json``, 401 with
OpenAI's error body for a wrong key, 400 for a request without a file or a
model. What it was sent is kept for the test to read.

    with FakeTranscription(says="take the iron at eight") as api:
        api.url   # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.fakes.threaded_server import ThreadedServer

KEY = "sk-test-transcription-key"


class FakeTranscription:
    """The transcription endpoint, answering every audio file with ``says``."""

    def __init__(self, says: str, key: str = KEY) -> None:
        self.says = says
        self.key = key
        #: Each request taken: model, response_format, file name, type and bytes.
        self.requests: list[dict[str, Any]] = []
        self._http: ThreadedServer | None = None
        self._port: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    def __enter__(self) -> FakeTranscription:
        app = Starlette(routes=[Route("/v1/audio/transcriptions", self._post, methods=["POST"])])
        self._http = ThreadedServer(app, "fake-transcription")
        self._port = self._http.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._http is not None:
            self._http.stop()

    async def _post(self, request: Request) -> JSONResponse:
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return _error(401, "Incorrect API key provided.", "invalid_api_key")
        form = await request.form()
        audio, model = form.get("file"), form.get("model")
        if not isinstance(audio, UploadFile) or not isinstance(model, str) or not model:
            return _error(400, "Missing required parameter: 'file' or 'model'.", None)
        self.requests.append(
            {
                "model": model,
                "response_format": form.get("response_format"),
                "filename": audio.filename,
                "content_type": audio.content_type,
                "data": await audio.read(),
            }
        )
        return JSONResponse({"text": self.says})


def _error(status: int, message: str, code: str | None) -> JSONResponse:
    body = {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    }
    return JSONResponse(body, status)
