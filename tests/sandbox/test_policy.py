"""The pure parts of the jail: what it may reach, and what bubblewrap is told."""

from __future__ import annotations

from pathlib import Path

from butler.sandbox import allowed_targets
from butler.sandbox.egress import Target, parse_absolute, parse_authority
from butler.sandbox.jail import Jail
from butler.sandbox.policy import JAIL_HOME, JailPolicy, bwrap_argv


def test_the_model_api_comes_from_the_runtimes_configuration_and_never_the_database():
    env = {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9100",
        "DATABASE_URL": "postgresql://u:secret@127.0.0.1:5432/db",
        "NOTES": "see https://not-a-url-variable.example/",
    }
    allowed = allowed_targets(
        "claude-code", env, [], "http://127.0.0.1:8100/mcp?session=s", ["extra.example:8443"]
    )
    assert Target("127.0.0.1", 9100) in allowed and Target("localhost", 9100) in allowed
    assert Target("127.0.0.1", 8100) in allowed
    assert Target("extra.example", 8443) in allowed
    assert not any(t.port == 5432 for t in allowed)
    assert Target("not-a-url-variable.example", 443) not in allowed
    # Pointed elsewhere, the CLI's own API host is not allowed too.
    assert Target("api.anthropic.com", 443) not in allowed


def test_without_a_configured_url_the_clis_default_host_is_allowed():
    codex_args = ['model_providers.fake={base_url="https://models.example/v1"}']
    assert Target("api.anthropic.com", 443) in allowed_targets("claude-code", {}, [], None, [])
    assert Target("models.example", 443) in allowed_targets("codex", {}, codex_args, None, [])
    assert allowed_targets("command", {}, [], None, ["plain.example"]) == {
        Target("plain.example", 443),
        Target("plain.example", 80),
    }


def test_proxy_request_targets_are_parsed_strictly():
    assert parse_authority("Exfil.Example.:443", 443) == Target("exfil.example", 443)
    assert parse_authority("[::1]:8100", 443) == Target("::1", 8100)
    for bad in ("", "host:0", "host:99999", "user@host:443", "host/path", "a:b:c"):
        assert parse_authority(bad, 443) is None, bad
    assert parse_absolute("http://exfil.example/steal?x=1") == (
        Target("exfil.example", 80),
        "/steal?x=1",
    )
    assert parse_absolute("ftp://exfil.example/")[0] is None


def test_bubblewrap_gets_new_namespaces_no_capabilities_and_only_the_named_paths(tmp_path: Path):
    folder, home = tmp_path / "butler", tmp_path / "home"
    policy = JailPolicy(
        read_only=(Path("/usr/lib"),),
        writable=(folder, home),
        read_only_over=(folder / "butler.toml",),
        cwd=folder,
    )
    argv = bwrap_argv(policy)
    assert argv[:5] == ["bwrap", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
    assert "--new-session" in argv and "--share-net" not in argv
    assert "--new-session" not in bwrap_argv(JailPolicy(interactive=True))
    binds = [argv[i + 1] for i, a in enumerate(argv) if a.endswith("bind-try")]
    # Writable, then butler.toml read-only on top: the later mount wins.
    assert binds == [str(folder), str(home), str(folder / "butler.toml")]
    assert (
        argv[argv.index("--tmpfs") + 1] == "/tmp"
        and ["--proc", "/proc"] == argv[argv.index("--proc") : argv.index("--proc") + 2]
    )
    assert "/root" not in argv and "/home" not in argv and "/run/postgresql" not in argv


def test_the_home_is_bound_at_one_path_and_only_its_own_name_is_moved_there(tmp_path: Path):
    home = tmp_path / "homes" / "abc"
    argv = bwrap_argv(JailPolicy(home=home))
    at = argv.index("--bind", argv.index("--dir"))
    assert argv[at : at + 3] == ["--bind", str(home), str(JAIL_HOME)]
    jail = Jail(JailPolicy(home=home), egress=None, proxy_port=3128, forwards=())  # type: ignore[arg-type]
    assert jail.inside(f"{home}/.codex") == f"{JAIL_HOME}/.codex"
    assert jail.inside(f'{{"cache": "{home}"}}') == f'{{"cache": "{JAIL_HOME}"}}'
    # Another session's home whose name starts the same way is not this one.
    assert jail.inside(f"{home}def/x") == f"{home}def/x"


def test_the_jails_path_keeps_the_system_and_bound_folders_in_order(tmp_path: Path):
    policy = JailPolicy(read_only=(tmp_path / "tools",))
    search = f"/root/.pyenv/shims:{tmp_path / 'tools' / 'bin'}:/usr/bin:relative:/usr/bin:/bin"
    assert policy.visible_path(search) == f"{tmp_path / 'tools' / 'bin'}:/usr/bin:/bin"
    assert policy.visible_path("/root/.cargo/bin") == "/usr/local/bin:/usr/bin:/bin"


def test_the_jails_path_judges_a_folder_as_written_by_its_normal_form(tmp_path: Path):
    policy = JailPolicy(read_only=(tmp_path / "tools",), writable=(tmp_path / "work",))
    search = f"/usr//bin/:{tmp_path}/tools/./bin:{tmp_path}/workshop/bin:{tmp_path}/work/"
    # Kept as written when the jail shows it; a folder beside a bound one is not in it.
    assert policy.visible_path(search) == f"/usr//bin/:{tmp_path}/tools/./bin:{tmp_path}/work/"
