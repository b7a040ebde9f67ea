"""From what a person asked to a :class:`BuilderPlan`: id, branch, worktree, prompt, role.

Reads the roster (protocols and roles of the butler) and the target
repository (specs, plans, context files); every name a person gives is
checked against what exists, so no path can leave those folders. Sessions
write the butler folder and builders the repository, so each of those files
is found and read through :mod:`butler.security.untrusted`: a role or
protocol that is a link (to the owner token, say) is not there at all.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from butler.builders import ids
from butler.builders.modes import SAFE_NAME, Mode, SpawnOptions, check_name
from butler.errors import UserError
from butler.sandbox.policy import BUILDERS_DIR
from butler.security import untrusted

#: Longest role file read into a builder's prompt.
MAX_ROLE_BYTES = 256 * 1024


@dataclass(frozen=True)
class RoleFile:
    """A role: a file below a folder the daemon trusts (the butler's, the repository)."""

    root: Path
    relative: str

    @property
    def path(self) -> Path:
        return self.root / self.relative

    def text(self) -> str:
        """Its text, read with no link followed; one line naming it when it cannot be."""
        try:
            data = untrusted.read(self.root, self.relative, MAX_ROLE_BYTES)
            return data.decode("utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(
                f"role {self.path}: cannot be used ({exc}); expected a UTF-8 regular file of "
                f"at most {MAX_ROLE_BYTES} bytes, not a link"
            ) from None


@dataclass(frozen=True)
class BuilderPlan:
    """Everything decided about one builder before anything is created."""

    type: Mode
    id: str
    branch: str
    repo: Path
    prompt: str
    role: RoleFile | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def worktree(self) -> Path:
        return self.repo / BUILDERS_DIR / self.id

    def role_text(self) -> str:
        return self.role.text() if self.role else ""

    def metadata(self) -> dict[str, Any]:
        """What the session row records about this builder, for people and for prune."""
        return {
            "builder_id": self.id,
            "branch": self.branch,
            "worktree": str(self.worktree),
            "repo": str(self.repo),
            "role": str(self.role.path) if self.role else None,
            **self.details,
        }


def available_protocols(config_dir: Path) -> list[str]:
    """Protocol names of a butler: ``protocols/<name>/protocol.md`` folders (no links)."""
    return [
        name
        for name in untrusted.names(config_dir, "protocols")
        if SAFE_NAME.match(name) and untrusted.is_file(config_dir, f"protocols/{name}/protocol.md")
    ]


def find_protocol(config_dir: Path, name: str) -> Path:
    """``protocols/<name>/protocol.md``; an unknown name lists the known ones."""
    known = available_protocols(config_dir)
    if name not in known:
        listing = (
            ", ".join(known) if known else f"none (add {config_dir}/protocols/NAME/protocol.md)"
        )
        raise UserError(f"unknown protocol {name!r}; available protocols: {listing}")
    return config_dir / "protocols" / name / "protocol.md"


def _role(root: Path, relative: str) -> RoleFile | None:
    return RoleFile(root, relative) if untrusted.is_file(root, relative) else None


def builder_role(config_dir: Path) -> RoleFile | None:
    return _role(config_dir, "roles/builder.md")


def protocol_role(config_dir: Path, name: str) -> RoleFile | None:
    """The protocol's own ``role.md``, else the butler's builder role."""
    return _role(config_dir, f"protocols/{name}/role.md") or builder_role(config_dir)


def find_role(config_dir: Path, role: str, repo: Path | None = None) -> RoleFile:
    """``--role``: a role by name, ``roles/<name>.md`` of the butler, else of the repository.

    Never a path: a caller (perhaps a runtime) must not make the daemon read a
    file of its choosing into a prompt; nor is a role that is a link.
    """
    name = role.removesuffix(".md")
    roots = [config_dir] + ([repo] if repo is not None else [])
    if SAFE_NAME.match(name):
        for root in roots:
            found = _role(root, f"roles/{name}.md")
            if found is not None:
                return found
    known = sorted(
        {
            n.removesuffix(".md")
            for root in roots
            for n in untrusted.regular_names(root, "roles", "*.md")
        }
    )
    listing = ", ".join(known) or "none"
    folders = " or ".join(str(root / "roles") for root in roots)
    raise UserError(
        f"--role {role!r}: expected the name of a role in {folders} "
        f"(letters, digits, '-' or '_'; no path); known roles: {listing}"
    )


def find_spec(repo: Path, project: str) -> tuple[str, str | None]:
    """``specs/<id>-*.md`` and ``plans/<id>-*.md`` (if any), relative to the repository."""
    check_name(project, "--project")
    specs = untrusted.regular_names(repo, "specs", f"{project}-*.md")
    if not specs:
        known = [n.removesuffix(".md") for n in untrusted.regular_names(repo, "specs", "*.md")]
        listing = ", ".join(known) if known else "none"
        raise UserError(f"no spec specs/{project}-*.md in {repo}; available specs: {listing}")
    if len(specs) > 1:
        raise UserError(
            f"--project {project} matches several specs ({', '.join(specs)}); expected one"
        )
    plans = untrusted.regular_names(repo, "plans", f"{project}-*.md")
    return f"specs/{specs[0]}", f"plans/{plans[0]}" if plans else None


def check_files(repo: Path, files: tuple[str, ...]) -> tuple[str, ...]:
    """Context files as paths relative to the repository; each must exist in it."""
    checked: list[str] = []
    for name in files:
        path = Path(name) if Path(name).is_absolute() else repo / name
        path = path.resolve()
        if not path.is_relative_to(repo):
            raise UserError(f"--files: {name} is outside the repository {repo}")
        if not path.exists():
            raise UserError(f"--files: {name} not found in {repo}")
        checked.append(str(path.relative_to(repo)))
    return tuple(checked)


def task_prompt(text: str, files: tuple[str, ...]) -> str:
    if not files:
        return text
    return f"{text}\n\nRelevant files: {', '.join(files)}"


def protocol_prompt(name: str, args: dict[str, Any] | None, protocol_md: Path) -> str:
    """Spec 004's protocol prompt; args re-serialised, so no text can leave the JSON block."""
    parts = [f"You are running the {name} protocol."]
    if args:
        parts.append(f"Protocol arguments:\n```json\n{json.dumps(args, indent=2)}\n```")
    parts.append(f"Start by reading {protocol_md}")
    return "\n\n".join(parts)


def spec_prompt(spec: str, plan: str | None) -> str:
    prompt = f"Implement the feature specified in {spec}."
    return f"{prompt} Follow the plan in {plan}." if plan else prompt


def make_plan(
    mode: Mode,
    options: SpawnOptions,
    config_dir: Path,
    repo: Path,
    taken: set[str],
    now: int | None = None,
) -> BuilderPlan:
    """Resolve ``options`` in ``mode`` against the roster and the repository."""
    now = int(time.time()) if now is None else now
    if mode == "task":
        return _task_plan(options, config_dir, repo, taken)
    if mode == "protocol":
        return _protocol_plan(options, config_dir, repo, taken, now)
    if mode == "spec":
        return _spec_plan(options, config_dir, repo, taken)
    role = find_role(config_dir, options.role, repo) if options.role else None
    builder_id = ids.shell_id(now, taken)
    return BuilderPlan(mode, builder_id, ids.branch_name(builder_id), repo, "", role, {})


def _task_plan(options: SpawnOptions, config_dir: Path, repo: Path, taken: set[str]) -> BuilderPlan:
    text = (options.task_text or "").strip()
    files = check_files(repo, options.files)
    builder_id = ids.task_id(text, taken)
    details = {"task": text, "files": list(files)}
    prompt = task_prompt(text, files)
    branch = ids.branch_name(builder_id)
    return BuilderPlan("task", builder_id, branch, repo, prompt, builder_role(config_dir), details)


def _protocol_plan(
    options: SpawnOptions, config_dir: Path, repo: Path, taken: set[str], now: int
) -> BuilderPlan:
    name = check_name(options.protocol or "", "--protocol")
    protocol_md = find_protocol(config_dir, name)
    builder_id = ids.protocol_id(name, now, taken)
    details = {"protocol": name, "protocol_args": options.args or {}}
    prompt = protocol_prompt(name, options.args, protocol_md)
    role = protocol_role(config_dir, name)
    return BuilderPlan(
        "protocol", builder_id, ids.branch_name(builder_id), repo, prompt, role, details
    )


def _spec_plan(options: SpawnOptions, config_dir: Path, repo: Path, taken: set[str]) -> BuilderPlan:
    spec, plan = find_spec(repo, options.project or "")
    builder_id = options.project or ""
    if builder_id in taken or Path(spec).stem in taken:
        raise UserError(
            f"builder {builder_id} already exists; attach with "
            f"`butler builders attach {builder_id}`, or remove it with "
            "`butler builders prune` once it has finished"
        )
    branch = ids.branch_name(builder_id, Path(spec).stem)
    details = {"project": builder_id, "spec": spec, "plan": plan}
    prompt = spec_prompt(spec, plan)
    return BuilderPlan("spec", builder_id, branch, repo, prompt, builder_role(config_dir), details)
