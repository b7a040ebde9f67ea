"""A schedule's digest prompt, and a runtime that records what it was asked."""

from __future__ import annotations

from butler.runtimes.base import Invocation, ProgressSink, RuntimeAdapter, RuntimeResult

PARIS_DIGEST = """
[[butler.schedule]]
name = "digest"
cron = "0 8 * * *"
timezone = "Europe/Paris"
prompt = "Write the morning digest."
"""


class RecordingAdapter(RuntimeAdapter):
    """A runtime that answers at once and remembers every prompt, across workers."""

    type_name = "recording"
    binary_name = "recording"
    prompts: list[str] = []  # noqa: RUF012 - shared on purpose: workers are new instances

    async def invoke(
        self, invocation: Invocation, progress: ProgressSink | None = None
    ) -> RuntimeResult:
        RecordingAdapter.prompts.append(invocation.prompt)
        return RuntimeResult(output=f"done: {invocation.prompt}")
