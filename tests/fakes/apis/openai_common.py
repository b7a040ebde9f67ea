"""What the two OpenAI APIs (Responses and chat completions) share."""

from __future__ import annotations

from starlette.responses import Response

from tests.fakes.apis.base import json_response

ERROR_TYPES = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "forbidden"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


def openai_error(status: int, message: str) -> Response:
    """`{"error": {"message", "type", "code", "param"}}` with the given status."""
    kind, code = ERROR_TYPES.get(status, ("server_error", "server_error"))
    return json_response(
        {"error": {"message": message, "type": kind, "code": code, "param": None}},
        status=status,
    )
