"""The docker compose deployment, as far as it can be checked without a Docker engine.

The structure of docker-compose.yml and the Dockerfile is checked against the
roster and the pinned CLIs; then each butler service's exact command runs here
with the environment its container would get (the image's ENV, .env from
.env.example, the service's environment), only the database host, the port
and the container paths swapped for this machine's.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from butler.roster import load_roster
from butler.spawner.preflight import NEEDS
from tests.conftest import TEST_DSN
from tests.helpers import REPO, TEST_TOKEN, free_port, get_json, missing_tool, wait_until

pytestmark = pytest.mark.slow

COMPOSE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
ENV_EXAMPLE = REPO / ".env.example"
SECCOMP_PROFILE = REPO / "deploy" / "seccomp-bwrap.json"
DOCKER_DEFAULT = REPO / "deploy" / "seccomp" / "docker-default.json"
CLONE_NEWUSER = 0x10000000
ROSTER = {c.name: c for c in load_roster(REPO / "roster")}
_VARIABLE = re.compile(r"\$\{(\w+)(?:(:?[-?])([^}]*))?\}")
#: What a person must put in .env before compose starts (the example leaves them empty).
REQUIRED = {
    "POSTGRES_PASSWORD": "pw4tests",
    "GRAFANA_ADMIN_PASSWORD": "grafana4tests",
    "BUTLER_TOKEN": TEST_TOKEN,  # the butlers' owner token: none that works is given
}
#: An image reference pinned to a patch release: x.y.z, or PostgreSQL's x.y (its patch level).
PINNED = re.compile(r"^[\w./-]+:(\d+\.\d+\.\d+|(?<=^postgres:)\d+\.\d+)(-[\w.-]+)?$")


def env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines, as compose reads an env_file."""
    pairs = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def interpolate(value: Any, variables: dict[str, str]) -> Any:
    """Compose's ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?error}``."""
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        name, kind, rest = match.groups()
        if variables.get(name):
            return variables[name]
        if kind and kind.endswith("?"):
            raise AssertionError(f"{name} is required: {rest}")
        return rest if kind else ""

    return _VARIABLE.sub(one, value)


def compose_file() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def dotenv() -> dict[str, str]:
    """.env as a person makes it: the example with the required passwords filled in."""
    return {**env_file(ENV_EXAMPLE), **REQUIRED}


def service_environment(name: str) -> dict[str, str]:
    """What compose puts in the service's environment: env_file, then environment."""
    dotenv_values = dotenv()
    service = compose_file()["services"][name]
    env = dict(dotenv_values) if service.get("env_file") == ".env" else {}
    for key, value in service.get("environment", {}).items():
        env[key] = str(interpolate(value, dotenv_values))
    return env


def declared_keys(name: str) -> set[str]:
    """The variables butler ``name``'s roster entry says its runtime needs."""
    config = ROSTER[name]
    names = {NEEDS[config.runtime.type].keys[0], *config.butler.env.required}
    names |= set(config.butler.env.optional)
    for module in config.butler.modules.values():
        if module.enabled:
            names |= set(module.credentials)
    return names


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    found = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def base_images() -> list[str]:
    """Each stage's base image, its build argument replaced by the argument's default."""
    defaults = {}
    images = []
    for word, rest in dockerfile_instructions():
        if word == "ARG" and "=" in rest and not images:
            name, _, value = rest.partition("=")
            defaults[name] = value
        elif word == "FROM":
            image = rest.split()[0]
            images.append(_VARIABLE.sub(lambda m: defaults[m.group(1)], image))
    return images


def final_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    last_from = max(i for i, (word, _) in enumerate(instructions) if word == "FROM")
    return instructions[last_from:]


def image_env() -> dict[str, str]:
    """The ENV of the final image stage."""
    env: dict[str, str] = {}
    for word, rest in final_stage():
        if word == "ENV":
            for pair in shlex.split(rest):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def test_every_roster_butler_has_a_service_on_its_own_port():
    services = compose_file()["services"]
    for name, config in ROSTER.items():
        port = config.butler.port
        service = services[name]
        assert service["command"] == [
            "butler",
            "run",
            "--config",
            f"roster/{name}",
            "--port",
            str(port),
        ]
        assert service["ports"] == [f"127.0.0.1:{port}:{port}"]  # this machine only
        env = service_environment(name)
        assert env["BUTLER_PORT"] == str(port)
        assert env["BUTLER_HOST"] == "0.0.0.0"
        assert urlsplit(env["DATABASE_URL"]).hostname == "postgres"
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://lgtm:4318"
        # No env_file: the service gets exactly the keys its roster entry declares.
        assert "env_file" not in service
        infrastructure = {"DATABASE_URL", "OTEL_SERVICE_NAME"}
        given = {k for k in env if not k.startswith(("BUTLER_", "OTEL_EXPORTER_"))}
        assert given - infrastructure == declared_keys(name), name
        assert any(v.endswith(":/data") for v in service["volumes"])
        assert "./roster:/app/roster:ro" in service["volumes"]
    assert set(services) == {*ROSTER, "postgres", "lgtm"}


def by_default(value: str) -> str:
    """A compose value with each ``${VAR:-default}`` as it reads when .env does not set VAR."""
    return _VARIABLE.sub(lambda m: m.group(3) or "", value)


def test_butlers_start_after_a_healthy_database_and_are_health_checked():
    services = compose_file()["services"]
    postgres = services["postgres"]
    assert by_default(postgres["image"]).startswith("postgres:16.")
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    assert any(v.endswith(":/var/lib/postgresql/data") for v in postgres["volumes"])
    assert services["lgtm"]["image"].startswith("grafana/otel-lgtm:")
    assert services["lgtm"]["ports"] == [
        "127.0.0.1:3000:3000",
        "127.0.0.1:4317:4317",
        "127.0.0.1:4318:4318",
    ]
    for name in ROSTER:
        service = services[name]
        assert service["depends_on"]["postgres"] == {"condition": "service_healthy"}
        assert "/health" in " ".join(service["healthcheck"]["test"])
    healthchecks = [rest for word, rest in final_stage() if word == "HEALTHCHECK"]
    assert len(healthchecks) == 1 and "/health" in healthchecks[0]


def test_no_secret_is_written_in_the_deployment_files():
    # Provider key prefixes, or 32+ characters of letters and digits mixed: a token.
    looks_secret = re.compile(
        r"sk-[A-Za-z0-9_-]{8,}|AIza[0-9A-Za-z_-]{20,}"
        r"|(?=[A-Za-z0-9+/_-]*\d)(?=[A-Za-z0-9+/_-]*[A-Za-z])[A-Za-z0-9+/_-]{32,}"
    )
    for path in (COMPOSE, DOCKERFILE, ENV_EXAMPLE):
        assert not looks_secret.search(path.read_text(encoding="utf-8")), path
    secret_name = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
    for service in compose_file()["services"].values():
        for key, value in service.get("environment", {}).items():
            if secret_name.search(key):
                assert str(value).startswith("${"), f"{key} must come from .env"
    for key, value in env_file(ENV_EXAMPLE).items():
        if secret_name.search(key):
            assert value == "", f".env.example: {key} holds a value"
    for key in REQUIRED:
        assert env_file(ENV_EXAMPLE)[key] == ""
        assert f"${{{key}:?" in COMPOSE.read_text(encoding="utf-8"), f"{key} must be required"
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".env" in ignored
    assert ".env" in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()


def test_the_dockerfile_installs_the_clis_from_the_pinned_lock_file():
    pins = json.loads((REPO / "clis" / "package.json").read_text())["dependencies"]
    lock = json.loads((REPO / "clis" / "package-lock.json").read_text())["packages"]
    for name, version in pins.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} is not pinned exactly"
        assert lock[f"node_modules/{name}"]["version"] == version, name
    steps = dockerfile_instructions()
    froms = base_images()
    assert froms[0].startswith("node:20.") and froms[-1].startswith("python:3.11.")
    # Each base is a build argument: a machine without a registry builds from its own.
    assert [rest.split()[0] for word, rest in steps if word == "FROM"] == [
        "${NODE_IMAGE}",
        "${PYTHON_BUILD_IMAGE}",
        "${PYTHON_IMAGE}",
    ]
    assert ("COPY", "clis/package.json clis/package-lock.json ./") in steps
    assert any(word == "RUN" and rest.startswith("npm ci") for word, rest in steps)
    users = [rest for word, rest in final_stage() if word == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert image_env()["BUTLER_DATA_DIR"] == "/data"
    assert "BUTLER_PORT" not in image_env()


def test_every_image_is_pinned_to_a_patch_release():
    images = base_images()
    services = compose_file()["services"]
    images += [by_default(s["image"]) for n, s in services.items() if n not in ROSTER]
    for image in images:
        assert PINNED.match(image), f"{image}: expected an exact version tag"


def test_the_base_images_are_the_dockerfile_s_unless_env_names_those_butler_images_made():
    from butler.images import VARIABLES

    args = compose_file()["x-butler"]["build"]["args"]
    # Every base image argument of the Dockerfile, with the Dockerfile's own default.
    arguments = [rest.partition("=") for word, rest in dockerfile_instructions() if word == "ARG"]
    defaults = {name: value for name, _, value in arguments if name.endswith("_IMAGE")}
    assert {name: by_default(value) for name, value in args.items()} == defaults
    # Each variable `butler images` sets in .env is one the compose file reads.
    text = COMPOSE.read_text(encoding="utf-8")
    for variable in VARIABLES.values():
        assert f"${{{variable}:-" in text, variable


def test_the_dockerfile_asks_for_what_builders_and_the_jail_need_and_one_claude():
    runs = [rest for word, rest in final_stage() if word == "RUN"]
    apt = next(r for r in runs if "apt-get install" in r)
    assert {"git", "tmux", "bubblewrap"} <= set(apt.split())
    # The Python dependencies come from the lock file, every file's hash checked.
    assert ("COPY", "requirements.lock ./") in final_stage()
    assert any("--require-hashes" in r and "-r requirements.lock" in r for r in runs)
    # The project itself is the wheel its own stage built, the jail's bridge compiled in
    # there: the image has no compiler.
    assert ("COPY", "--from=wheel /wheels /tmp/wheels") in final_stage()
    assert any(r.startswith("pip install --no-deps /tmp/wheels/butler-") for r in runs)
    wheel = [rest for word, rest in dockerfile_instructions() if word == "RUN" and "wheel" in rest]
    assert any(r.startswith("pip wheel --no-deps") for r in wheel)
    # `claude` in the image is the SDK's bundled one, and npm pins no second copy.
    assert any("_bundled" in r and "/usr/local/bin/claude" in r for r in runs)
    pins = json.loads((REPO / "clis" / "package.json").read_text())["dependencies"]
    assert "@anthropic-ai/claude-code" not in pins


def docker_compose() -> list[str] | None:
    """The compose client of this machine, if any (no engine is needed for ``config``)."""
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0
    ):
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_docker_compose_reads_the_file_as_these_tests_do(tmp_path):
    client = docker_compose()
    if client is None:
        missing_tool("a docker compose client")
    shutil.copy(COMPOSE, tmp_path / "docker-compose.yml")
    (tmp_path / "deploy").mkdir()
    shutil.copy(SECCOMP_PROFILE, tmp_path / "deploy")  # compose reads it
    (tmp_path / "roster").mkdir()
    shutil.copy(ENV_EXAMPLE, tmp_path / ".env")
    clean = {k: v for k, v in os.environ.items() if k not in REQUIRED}

    def config() -> subprocess.CompletedProcess[str]:
        argv = [*client, "-f", "docker-compose.yml", "config"]
        return subprocess.run(
            argv, cwd=tmp_path, env=clean, capture_output=True, text=True, timeout=60
        )

    # .env copied from the example as it is: compose refuses, naming what to set.
    refused = config()
    assert refused.returncode != 0
    assert any(key in refused.stderr for key in REQUIRED)
    with (tmp_path / ".env").open("a", encoding="utf-8") as out:
        out.writelines(f"{key}={value}\n" for key, value in REQUIRED.items())
    result = config()
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)["services"]
    for name in ROSTER:
        assert resolved[name]["command"] == compose_file()["services"][name]["command"]
        assert resolved[name]["environment"] == service_environment(name)
        assert resolved[name]["depends_on"]["postgres"]["condition"] == "service_healthy"


def container_env(name: str, port: int, data: Path, schema: str) -> dict[str, str]:
    """The container's environment, moved to this machine."""
    host_path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    env = {"HOME": str(data), "PATH": host_path}
    places = {"/app": REPO, "/data": data}
    for key, value in image_env().items():
        top = "/" + value.split("/")[1] if value.startswith("/") else ""
        if top in places:
            value = str(places[top]) + value[len(top) :]
        env[key] = value.replace("${PATH}", host_path)
    env.update(service_environment(name))
    database = urlsplit(env["DATABASE_URL"])
    assert (database.hostname, database.port) == ("postgres", 5432)
    env["DATABASE_URL"] = TEST_DSN
    env["BUTLER_DB_SCHEMA"] = schema  # one schema per test, as every test here
    env["BUTLER_PORT"] = str(port)
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT")  # no OpenTelemetry backend runs here
    if os.geteuid() == 0:
        env["BUTLER_ALLOW_ROOT"] = "1"  # the image runs it as uid 10001; the suite runs as root
    return env


@pytest.mark.parametrize("name", sorted(ROSTER))
def test_the_service_command_serves_health_with_the_container_environment(
    name, tmp_path, schema_name
):
    port = free_port()
    env = container_env(name, port, tmp_path, schema_name)
    command = [str(c) for c in compose_file()["services"][name]["command"]]
    command[command.index("--port") + 1] = str(port)
    workdir = [rest for word, rest in final_stage() if word == "WORKDIR"][-1]
    assert workdir == "/app"
    log = (tmp_path / "daemon.log").open("wb")
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:

        def answering() -> bool:
            assert proc.poll() is None, (tmp_path / "daemon.log").read_text()
            try:
                return get_json(f"http://127.0.0.1:{port}/health", timeout=1)[0] == 200
            except OSError:
                return False

        wait_until(answering, timeout=60)
        body = get_json(f"http://127.0.0.1:{port}/health")[1]
        assert (body["butler"], body["status"]) == (name, "ok")
        compose_check = compose_file()["services"][name]["healthcheck"]["test"]
        assert compose_check[0] == "CMD"
        assert subprocess.run(compose_check[1:], env=env, timeout=30).returncode == 0
        image_check = next(r for w, r in final_stage() if w == "HEALTHCHECK").split("CMD ", 1)[1]
        assert subprocess.run(["sh", "-c", image_check], env=env, timeout=30).returncode == 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def test_every_butler_jails_its_runtimes_with_only_what_the_jail_needs():
    services = compose_file()["services"]
    for name in ROSTER:
        service = services[name]
        assert service_environment(name)["BUTLER_SANDBOX"] == "bwrap"  # refuse, never unjailed
        assert service["cap_drop"] == ["ALL"]
        assert set(service["security_opt"]) == {
            "seccomp=./deploy/seccomp-bwrap.json",
            "systempaths=unconfined",
            "no-new-privileges:true",
        }
        assert not service.get("privileged") and "cap_add" not in service
    assert "security_opt" not in services["postgres"]


def test_the_seccomp_profile_is_dockers_default_plus_user_namespaces_and_their_mounts():
    check = subprocess.run(
        [REPO / "scripts" / "seccomp-profile", "--check"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
    default = json.loads(DOCKER_DEFAULT.read_text())
    profile = json.loads(SECCOMP_PROFILE.read_text())
    assert {k: v for k, v in profile.items() if k != "syscalls"} == {
        k: v for k, v in default.items() if k != "syscalls"
    }
    assert profile["syscalls"][: len(default["syscalls"])] == default["syscalls"]
    added = profile["syscalls"][len(default["syscalls"]) :]
    assert all(rule["action"] == "SCMP_ACT_ALLOW" for rule in added)
    assert {n for rule in added for n in rule["names"]} == {
        "clone",
        "unshare",
        "mount",
        "umount2",
        "pivot_root",
    }
    for rule in added:
        if {"clone", "unshare"} & set(rule["names"]):
            # Namespaces only together with a new user namespace.
            (arg,) = rule["args"]
            assert arg["op"] == "SCMP_CMP_MASKED_EQ"
            assert arg["value"] == arg["valueTwo"] == CLONE_NEWUSER
        assert not rule["includes"].get("caps")
    notice = (REPO / "deploy" / "seccomp" / "NOTICE").read_text()
    assert "Apache License" in notice and "docker-default.json" in notice
