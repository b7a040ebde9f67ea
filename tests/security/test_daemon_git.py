"""The daemon's git runs nothing a repository chose (docs/security.md, "The daemon's git").

Each vector is planted in a real repository exactly as a builder (whose jail had the
repository's whole ``.git`` writable) or a session (whose butler folder may be a
repository) could, then the daemon's own git calls run: every call a spawn and a
prune make. A planted program would leave a marker outside the repository; none may
appear. Each runs both in the daemon's git jail and with the jail taken away, so the
environment and the command-line overrides are shown to hold on their own.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from butler.builders import git
from butler.errors import ButlerError
from butler.sandbox import probe
from tests.builders import conftest as builder_fixtures
from tests.builders.conftest import run

pytestmark = pytest.mark.slow  # real git processes, many

repo = builder_fixtures.repo

#: Every hook git 2.39 knows (githooks(5)): whichever a call would run.
HOOKS = (
    "applypatch-msg pre-applypatch post-applypatch pre-commit pre-merge-commit "
    "prepare-commit-msg commit-msg post-commit pre-rebase post-checkout post-merge pre-push "
    "pre-receive update proc-receive post-receive post-update reference-transaction "
    "push-to-checkout pre-auto-gc post-rewrite sendemail-validate fsmonitor-watchman "
    "p4-changelist p4-prepare-changelist p4-post-changelist p4-pre-submit post-index-change"
).split()


@pytest.fixture(params=["jailed", "unjailed"])
def jail(request, monkeypatch) -> str:
    """The daemon's git in its own jail, or (to show the overrides alone hold) without."""
    if request.param == "jailed":
        assert probe() is None, f"no jail here: {probe()}; run scripts/setup-dev"
    else:
        monkeypatch.setattr(git, "_jail", _no_jail)
    return request.param


async def _no_jail(root: Path, writes: bool = False) -> list[str]:
    return []


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    folder = tmp_path / "markers"
    folder.mkdir()
    return folder


def program(repo: Path, markers: Path, name: str, body: str = "") -> Path:
    """A script planted in the repository's ``.git`` that leaves ``markers/name`` when run."""
    path = repo / ".git" / f"evil-{name}.sh"
    path.write_text(f"#!/bin/sh\ntouch {markers / name}\n{body}")
    path.chmod(0o755)
    return path


def configure(repo: Path, *pairs: str) -> None:
    """Settings in ``.git/config``, as a builder with the whole ``.git`` writable could."""
    for key, value in zip(pairs[::2], pairs[1::2], strict=True):
        run("git", "config", key, value, cwd=repo)


async def everything_the_daemon_does(repo: Path) -> list[str]:
    """Each git call a spawn and a prune make, in order; the errors they ended in."""
    errors: list[str] = []
    worktree = repo / ".builders" / "b1"

    async def attempt(call: Callable[[], object]) -> None:
        try:
            await call()  # type: ignore[misc]
        except ButlerError as exc:
            errors.append(str(exc))

    await attempt(lambda: git.repo_root(repo))
    await attempt(lambda: git.builder_names(repo))
    await attempt(lambda: git.add_worktree(repo, worktree, "builder/b1"))
    if worktree.is_dir():
        (worktree / "README.md").write_text("changed by the builder\n")  # status must look
    await attempt(lambda: git.is_dirty(worktree))
    await attempt(lambda: git.worktrees(repo))
    await attempt(lambda: git.branch_exists(repo, "builder/b1"))
    await attempt(lambda: git.is_merged(repo, "builder/b1"))
    await attempt(lambda: git.remove_worktree(repo, worktree, force=True))
    await attempt(lambda: git.delete_branch(repo, "builder/b1"))
    return errors


def left(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


async def test_no_planted_hook_runs(repo: Path, markers: Path, jail: str):
    hooks = repo / ".git" / "hooks"
    for name in HOOKS:
        (hooks / name).write_text(f"#!/bin/sh\ntouch {markers / name}\n")
        (hooks / name).chmod(0o755)
    errors = await everything_the_daemon_does(repo)
    assert errors == [] and left(markers) == []


async def test_no_hooks_folder_the_config_names_runs(repo: Path, markers: Path, jail: str):
    folder = repo / ".git" / "planted-hooks"
    folder.mkdir()
    for name in HOOKS:
        (folder / name).write_text(f"#!/bin/sh\ntouch {markers / name}\n")
        (folder / name).chmod(0o755)
    configure(repo, "core.hooksPath", str(folder))
    assert await everything_the_daemon_does(repo) == [] and left(markers) == []


async def test_a_planted_fsmonitor_does_not_run(repo: Path, markers: Path, jail: str):
    configure(repo, "core.fsmonitor", str(program(repo, markers, "fsmonitor")))
    assert await everything_the_daemon_does(repo) == [] and left(markers) == []


@pytest.mark.parametrize("how", ["include.path", "includeIf"])
async def test_an_included_config_switches_nothing_back_on(
    repo: Path, markers: Path, jail: str, how: str
):
    """An included file can set anything the config can; the overrides still come last."""
    included = repo / ".git" / "included.conf"
    hooks = repo / ".git" / "planted-hooks"
    hooks.mkdir()
    (hooks / "post-checkout").write_text(f"#!/bin/sh\ntouch {markers / 'post-checkout'}\n")
    (hooks / "post-checkout").chmod(0o755)
    fsmonitor = program(repo, markers, "fsmonitor")
    included.write_text(f"[core]\n\tfsmonitor = {fsmonitor}\n\thooksPath = {hooks}\n")
    key = "include.path" if how == "include.path" else f"includeIf.gitdir:{repo}/.git.path"
    configure(repo, key, str(included))
    assert await everything_the_daemon_does(repo) == [] and left(markers) == []


@pytest.mark.parametrize("key", ["remote.origin.uploadpack", "core.sshCommand"])
async def test_a_lazy_fetch_runs_no_configured_program(
    tmp_path: Path, markers: Path, jail: str, key: str
):
    """A partial clone fetches missing objects when checking out: through ``uploadpack``
    (file://) or ``sshCommand`` (ssh://), both programs the repository names. No
    transport may run at all, so the checkout fails rather than runs them."""
    origin = tmp_path / "origin"
    origin.mkdir()
    (origin / "README.md").write_text("# origin\n")
    run("git", "init", "-q", "-b", "main", cwd=origin)
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "add", ".", cwd=origin)
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init", cwd=origin)
    run("git", "config", "uploadpack.allowFilter", "true", cwd=origin)
    clone = tmp_path / "clone"
    source = f"file://{origin}"
    run("git", "clone", "-q", "--no-checkout", "--filter=blob:none", source, "clone", cwd=tmp_path)
    script = program(clone, markers, "transport", 'exec git-upload-pack "$@"\n')
    if key == "core.sshCommand":
        configure(clone, "remote.origin.url", "ssh://example.invalid/origin")
    configure(clone, key, str(script))
    await everything_the_daemon_does(clone)
    assert left(markers) == []


async def test_a_filter_driver_of_any_name_reaches_nothing_outside_the_repository(
    repo: Path, markers: Path, tmp_path: Path
):
    """No override can name every driver; the daemon's git jail holds the repository and
    nothing else, so a driver the config names cannot reach a file of the owner's."""
    assert probe() is None, f"no jail here: {probe()}; run scripts/setup-dev"
    secret = tmp_path / "owner-token"
    secret.write_text("token")
    script = program(repo, markers, "filter", f"cat {secret} > {markers / 'stolen'}\ncat\n")
    (repo / ".gitattributes").write_text("* filter=planted\n")
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "add", ".", cwd=repo)
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "attrs", cwd=repo)
    configure(repo, "filter.planted.smudge", str(script), "filter.planted.clean", str(script))
    await everything_the_daemon_does(repo)
    assert left(markers) == []


async def test_a_linked_info_exclude_is_replaced_never_written_through(
    repo: Path, tmp_path: Path, jail: str
):
    """Before, the daemon followed it and created or appended any file as its own user."""
    target = tmp_path / "owner" / "cron-job"
    target.parent.mkdir()
    exclude = repo / ".git" / "info" / "exclude"
    exclude.unlink()
    os.symlink(target, exclude)
    await everything_the_daemon_does(repo)
    assert not target.exists()
    assert "/.builders/" in exclude.read_text() and not exclude.is_symlink()


@pytest.mark.parametrize("linked", [".git", ".builders", ".git/info"])
async def test_a_linked_git_folder_is_refused(repo: Path, tmp_path: Path, jail: str, linked: str):
    """``.git`` linked to another repository's would have the daemon create worktrees and
    branches there (and a builder's jail bind it writable)."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "README.md").write_text("# the owner's other repository\n")
    run("git", "init", "-q", cwd=victim)
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "add", ".", cwd=victim)
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init", cwd=victim)
    before = sorted(str(p.relative_to(victim)) for p in victim.rglob("*"))
    place = repo / linked
    if place.exists():
        os.rename(place, tmp_path / "moved-away")
    os.symlink(victim / ".git" if linked == ".git" else victim / ".git" / "info", place)
    errors = await everything_the_daemon_does(repo)
    assert errors and "a link" in errors[0], errors
    assert sorted(str(p.relative_to(victim)) for p in victim.rglob("*")) == before


async def test_a_worktree_pointing_git_elsewhere_runs_nothing(repo: Path, markers: Path, jail: str):
    """A builder's worktree ``.git`` file says which git folder it uses: one it crafted
    there, with its own fsmonitor, must not run when prune asks whether it is dirty."""
    worktree = repo / ".builders" / "b1"
    await git.add_worktree(repo, worktree, "builder/b1")
    crafted = worktree / "crafted"
    crafted.mkdir()
    run("git", "init", "-q", cwd=crafted)
    configure(crafted, "core.fsmonitor", str(program(repo, markers, "fsmonitor")))
    (worktree / ".git").write_text(f"gitdir: {crafted / '.git'}\n")
    await git.is_dirty(worktree)
    assert left(markers) == []


async def test_a_submodule_filter_never_runs_in_the_daemons_git(
    repo: Path, markers: Path, jail: str
):
    """A builder commits a repository of its own making as a submodule, whose config names
    a filter program: prune's dirty check and worktree removal never look into it (and
    in the jail, the repository's ``.git`` is read-only while they look)."""
    worktree = repo / ".builders" / "b1"
    await git.add_worktree(repo, worktree, "builder/b1")
    sub = worktree / "sub"
    sub.mkdir()
    (sub / "f").write_text("data\n")
    (sub / ".gitattributes").write_text("* filter=x\n")
    run("git", "init", "-q", cwd=sub)
    run("git", "-c", "user.name=b", "-c", "user.email=b@b", "add", ".", cwd=sub)
    run("git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "s", cwd=sub)
    planted = repo / ".git" / "planted"  # where the jail's program would leave its mark
    filter_ = program(repo, markers, "filter", f"touch {planted}\ncat\n")
    configure(sub, "filter.x.clean", str(filter_))
    os.utime(sub / "f", (0, 0))  # stale in the index: status would run the filter
    run("git", "-c", "user.name=b", "-c", "user.email=b@b", "add", "sub", cwd=worktree)
    run("git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "sub", cwd=worktree)
    assert await git.is_dirty(worktree) is False
    await git.remove_worktree(repo, worktree, force=True)
    assert left(markers) == [] and not planted.exists() and not worktree.exists()


def test_every_program_setting_git_documents_is_overridden():
    """The overrides name each setting git 2.39 runs a program from that a repository's
    config can set by a fixed name (drivers of any name are the jail's to hold)."""
    named = {setting.split("=", 1)[0] for setting in git.OVERRIDES}
    programs = """core.hooksPath core.fsmonitor core.sshCommand core.gitProxy core.askPass
        core.editor sequence.editor core.pager core.alternateRefsCommand diff.external
        credential.helper gpg.program gpg.openpgp.program gpg.x509.program gpg.ssh.program
        gpg.ssh.defaultKeyCommand uploadpack.packObjectsHook protocol.allow"""
    assert set(programs.split()) <= named
    assert git.ENVIRONMENT["GIT_CONFIG_NOSYSTEM"] == "1"
    assert git.ENVIRONMENT["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
