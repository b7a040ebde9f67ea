"""A session's runtime run by ``butler worker``: the local path's steps, on another machine.

The spawner's side of a worker (``butler/workers/`` picks the job, notes it in
its machine's ledger and hands the result back). The runtime runs through the
same function as in the daemon (:class:`butler.spawner.execution.Execution`):
the butler's memory (read from the database the worker shares with the
daemon), a private workspace with the session's attachments, the invocation,
the jail (whose egress proxy lets through only the butler's MCP address and
the runtime's model API) and the time limit. What differs is only what belongs
to the daemon's machine: the token is given (its worker minted it at the claim),
not issued; the runtime's process group
goes to the caller (the worker's ledger) rather than the row, since only the
worker's machine can end it; and how the run ended is returned (an
:class:`~butler.spawner.result.Ending`) for the daemon to record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from butler.config import ButlerConfig
from butler.errors import ButlerError
from butler.runtimes.base import RuntimeFailure
from butler.spawner.execution import Execution
from butler.spawner.result import Ending
from butler.spawner.session import Session


class GivenToken:
    """The session's token its worker minted at the claim, where ``build_invocation``
    would issue one."""

    def __init__(self, token: str) -> None:
        self._token = token

    def issue(self, session_id: str) -> str:
        return self._token


@dataclass
class WorkerRuns:
    """Runs one butler's picked sessions on this machine, each in a workspace of its own
    (``execution`` is made by the worker, its sandbox decided once when it starts and
    its runtimes calling the butler across the network, at ``config.callback_url``)."""

    execution: Execution

    @property
    def config(self) -> ButlerConfig:
        return self.execution.config

    async def run(self, session: Session, token: str, started: Callable[[int], None]) -> Ending:
        """Run ``session``'s runtime here with the daemon's ``token``; how it ended, to
        hand back. ``started`` is told its process. The daemon explains a failure
        (preflight.explain) when it records it."""
        end = Ending()
        try:
            end.result = await self.execution.run(session, GivenToken(token), on_process=started)
            end.status = "succeeded"
        except RuntimeFailure as exc:
            end.error, end.result = str(exc), exc.partial
        except ButlerError as exc:  # a cause named for the user (a full temp folder): as is
            end.error = str(exc)
        except Exception as exc:  # the daemon records it; the worker goes on with the next
            end.error = f"internal error on the worker: {type(exc).__name__}: {exc}"
        return end
