"""A session's runtime run by a worker on another machine: both ends of the hand-over.

The daemon admits and records the session as always, then, for a butler whose
``[butler.runtime] workers`` is ``"remote"``, issues the session's token and
hands the run to the job queue (:func:`run_on_worker`) instead of starting the
runtime itself. A worker picks the job and runs it (:func:`run_job`) through the
same steps a local run takes (a private workspace and home, ``build_invocation``,
the jail, the adapter, the time limit), and hands the result back; the daemon
completes the row through its lifecycle, merging the tool calls its own server
saw. See docs/scaling.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from butler.config import ButlerConfig
from butler.errors import ButlerError
from butler.runtimes.base import RuntimeAdapter, RuntimeFailure, RuntimeResult, ToolCall, Usage
from butler.security.session_tokens import SessionTokens
from butler.spawner.homes import discard_home
from butler.spawner.invocation import InvocationRequest, build_invocation
from butler.spawner.request import TriggerRequest
from butler.spawner.sandboxing import jailed
from butler.spawner.workspace import Workspace
from butler.store.credentials import CredentialStore
from butler.store.session_jobs import SessionJob, SessionJobs

#: Extra seconds past a session's own time limit for a worker to pick it up and report.
PICKUP_GRACE_S = 60.0


def job_for(request: TriggerRequest, session_id: str, parent: dict | None) -> SessionJob:
    """The job a worker runs for ``request``; its token is issued when it is enqueued."""
    if request.files or request.writable:
        raise ButlerError(
            "this butler runs its sessions on workers ([butler.runtime] workers = "
            '"remote"), which do not take attachments or writable folders yet; '
            'set workers = "local" for it'
        )
    return SessionJob(
        session_id=session_id,
        prompt=request.full_prompt(),
        token="",
        max_turns=request.max_turns,
        timeout_s=request.timeout_s,
        model=request.model,
        resume=parent["runtime_session_id"] if parent else None,
        parent_id=str(parent["id"]) if parent else None,
    )


async def run_on_worker(
    config: ButlerConfig,
    jobs: SessionJobs,
    tokens: SessionTokens,
    job: SessionJob,
) -> tuple[str, RuntimeResult]:
    """Hand ``job`` to the workers and wait for its result; ``(worker, result)``.

    Raises :class:`RuntimeFailure` with what the runtime produced when it failed,
    and when no worker reported within the session's time limit and a grace.
    """
    token = tokens.issue(job.session_id)
    job = dataclasses.replace(job, token=token)
    await jobs.enqueue(job)
    limit = (job.timeout_s or config.runtime.timeout_s) + PICKUP_GRACE_S
    try:
        async with asyncio.timeout(limit):
            worker, handed = await jobs.wait_result(job.session_id)
    except TimeoutError:
        raise RuntimeFailure(
            f"no worker reported this session within {limit:g} s: check that `butler worker` "
            f"runs for {config.name} (`butler workers`) and reaches {config.mcp_base_url}"
        ) from None
    await jobs.forget(job.session_id)
    result = _result_of(handed.get("result") or {})
    if handed.get("status") != "succeeded":
        error = handed.get("error") or "the runtime failed on its worker"
        raise RuntimeFailure(f"{error} (on worker {worker})", result)
    return worker, result


class _GivenToken:
    """The daemon's token for the session, where ``build_invocation`` would issue one."""

    def __init__(self, token: str) -> None:
        self._token = token

    def issue(self, session_id: str) -> str:
        return self._token


async def run_job(
    config: ButlerConfig,
    adapter: RuntimeAdapter,
    credentials: CredentialStore,
    sandbox: str,
    job: SessionJob,
) -> dict[str, Any]:
    """Run one picked session's runtime here; what to hand back to the daemon."""
    status, error, result = "failed", None, RuntimeResult()
    try:
        with Workspace(f"butler_{config.name}_") as workspace:
            invocation = await build_invocation(
                config,
                adapter,
                credentials,
                InvocationRequest(
                    session_id=job.session_id,
                    prompt=job.prompt,
                    cwd=config.config_dir,
                    workdir=workspace.path,
                    parent_id=job.parent_id,
                    resume=job.resume,
                    max_turns=job.max_turns,
                    timeout_s=job.timeout_s,
                    model=job.model,
                ),
                _GivenToken(job.token),  # type: ignore[arg-type]
            )
            workspace.write(adapter.mcp_config_files(invocation))
            async with jailed(config, sandbox, invocation, label=job.session_id) as invocation:
                try:
                    async with asyncio.timeout(invocation.timeout_s + 10):
                        result = await adapter.invoke(invocation)
                except TimeoutError:
                    raise RuntimeFailure(f"timeout after {invocation.timeout_s:g} s") from None
        status = "succeeded"
    except RuntimeFailure as exc:
        error, result = str(exc), exc.partial
    except Exception as exc:  # the daemon records it; the worker goes on with the next
        error = f"internal error on the worker: {type(exc).__name__}: {exc}"
    finally:
        if not adapter.supports_resume:
            discard_home(config.name, job.session_id)
    return {"status": status, "error": error, "result": _json_of(result)}


def _json_of(result: RuntimeResult) -> dict[str, Any]:
    data = dataclasses.asdict(result)
    data["tool_calls"] = [call.to_json() for call in result.tool_calls]
    return data


def _result_of(data: dict[str, Any]) -> RuntimeResult:
    calls = [
        ToolCall(
            name=str(call.get("name", "")),
            arguments=call.get("arguments") or {},
            call_id=call.get("id"),
            error=call.get("error"),
            source=call.get("source", "runtime"),
        )
        for call in data.get("tool_calls") or []
    ]
    usage = data.get("usage") or {}
    return RuntimeResult(
        output=str(data.get("output") or ""),
        tool_calls=calls,
        usage=Usage(**{k: int(usage.get(k) or 0) for k in dataclasses.asdict(Usage())}),
        cost_usd=data.get("cost_usd"),
        runtime_session_id=data.get("runtime_session_id"),
        error=data.get("error"),
        num_turns=data.get("num_turns"),
        model=data.get("model"),
    )
