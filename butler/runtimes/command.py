"""Any other agent CLI, described in ``butler.toml`` by a command template.

    [butler.runtime]
    type = "command"
    command = ["my-agent", "--prompt-file", "{prompt_file}", "--mcp-config", "{mcp_config}"]

Each argv element may hold placeholders, replaced inside that element only;
the command never passes through a shell, so no text of the prompt can
become a shell word. The answer is stdout; a non-zero exit is an error
carrying stderr. A user adds a runtime without touching butler's code.
"""

from __future__ import annotations

import re
import shutil

from butler.runtimes.base import Command, Invocation, RuntimeFailure, RuntimeResult, Said
from butler.runtimes.process import RuntimeProcess
from butler.runtimes.settings import RuntimeConfig
from butler.runtimes.subprocess_adapter import SubprocessAdapter
from butler.security.private_files import write_private

PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
#: What a template may name, and what each becomes.
PLACEHOLDERS = (
    "prompt",
    "prompt_file",
    "system_prompt_file",
    "mcp_config",
    "workdir",
    "cwd",
    "home",
    "model",
    "max_turns",
)


def check_template(template: list[str], key: str = "command") -> None:
    """Raise ValueError for an empty template or an unknown placeholder."""
    if not template:
        raise ValueError(f"{key}: expected a non-empty argv list for the command runtime")
    for element in template:
        for name in PLACEHOLDER.findall(element):
            if name not in PLACEHOLDERS:
                raise ValueError(
                    f"{key}: unknown placeholder {{{name}}} in {element!r}; expected one of "
                    + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                )


def render(template: list[str], values: dict[str, str]) -> list[str]:
    """Substitute placeholders element by element; never joins, never splits."""
    return [PLACEHOLDER.sub(lambda m: values[m.group(1)], element) for element in template]


def template_values(invocation: Invocation) -> dict[str, str]:
    """Write the prompt files into the workspace; the values placeholders stand for."""
    prompt_file = invocation.workdir / "prompt.md"
    system_file = invocation.workdir / "system_prompt.md"
    write_private(prompt_file, invocation.prompt)
    write_private(system_file, invocation.system_prompt)
    return {
        "prompt": invocation.prompt,
        "prompt_file": str(prompt_file),
        "system_prompt_file": str(system_file),
        "mcp_config": str(invocation.workdir / "mcp.json"),
        "workdir": str(invocation.workdir),
        "cwd": str(invocation.cwd),
        "home": str(invocation.home),
        "model": invocation.model or "",
        "max_turns": str(invocation.max_turns),
    }


class TextStream:
    """The whole of stdout is the answer, up to ``max_bytes``; the rest is counted, not kept.

    Each line kept is said as it arrives (a chat shows the answer as it is written).
    """

    def __init__(self, max_bytes: int = 1024 * 1024) -> None:
        self.lines: list[str] = []
        self.max_bytes = max_bytes
        self.kept = 0
        self.dropped = 0

    def feed(self, line: str) -> list[str]:
        """Keep ``line``; it is said at once too, as the answer being written."""
        if self.dropped:
            self.dropped += len(line.encode("utf-8", "surrogatepass")) + 1
            return []
        encoded = line.encode("utf-8", "surrogatepass")
        room = self.max_bytes - self.kept
        if len(encoded) + 1 <= room:
            self.kept += len(encoded) + 1
            kept = line
        else:  # keep what fits of the line that crosses the limit
            kept = encoded[: max(room, 0)].decode("utf-8", "ignore")
            self.kept = self.max_bytes
            self.dropped = len(encoded) + 1 - max(room, 0)
        self.lines.append(kept)
        first = len(self.lines) == 1
        return [Said(kept if first else "\n" + kept, delta=not first)]

    def result(self) -> RuntimeResult:
        output = "\n".join(self.lines).strip("\n")
        if self.dropped:
            # Leave room for the marker, so output and marker fit the cap the store keeps.
            encoded = output.encode("utf-8", "surrogatepass")
            keep = max(self.max_bytes - 100, 0)
            lost = len(encoded) - keep + self.dropped
            output = encoded[:keep].decode("utf-8", "ignore")
            output += f"\n[butler: {lost} bytes cut at the {self.max_bytes}-byte limit]"
        return RuntimeResult(output=output)


class CommandAdapter(SubprocessAdapter):
    """A CLI given as an argv template in ``[butler.runtime] command``."""

    type_name = "command"
    binary_name = "command"

    @classmethod
    def validate_config(cls, config: RuntimeConfig) -> None:
        check_template(list(config.command))
        if config.interactive_command:
            check_template(list(config.interactive_command), "interactive_command")

    def binary(self, env: dict[str, str], key: str = "command") -> str:
        program = getattr(self.config, key)[0]
        found = shutil.which(program, path=env.get("PATH"))
        if found is None:
            # In the jail, PATH holds only the folders the jail shows: say which it was.
            raise RuntimeFailure(
                f"command runtime: {program!r} not found on PATH ({env.get('PATH', '')}); "
                "expected an installed program or an absolute path as the first element "
                f"of [butler.runtime] {key}"
            )
        return found

    def command(self, invocation: Invocation, binary: str) -> Command:
        argv = [binary, *render(list(self.config.command[1:]), template_values(invocation))]
        argv += list(invocation.args)
        env = {**invocation.env, "HOME": str(invocation.home)}
        return Command(argv=argv, env=env)

    def parser(self, invocation: Invocation, process: RuntimeProcess) -> TextStream:
        return TextStream(invocation.max_output_bytes)

    def interactive_command(self, invocation: Invocation) -> Command:
        """``[butler.runtime] interactive_command`` rendered like ``command``, never a shell."""
        template = list(self.config.interactive_command)
        if not template:
            raise RuntimeFailure(
                "runtime command has no interactive mode; expected [butler.runtime] "
                "interactive_command, an argv template like command"
            )
        binary = self.binary(invocation.env, "interactive_command")
        argv = [binary, *render(template[1:], template_values(invocation))]
        return Command(argv=argv, env={**invocation.env, "HOME": str(invocation.home)})
