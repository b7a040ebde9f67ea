"""``butler images``: the compose deployment's base images, made on this machine.

Where no image registry answers, ``docker compose up --build`` cannot pull
``python`` (slim, and the full one that builds butler's wheel), ``node`` and
``postgres``. These stand in for them: Debian 12 made by ``debootstrap`` and
imported, with this machine's CA certificates trusted (a registry proxy that
presents them works inside the builds too); Python (with a C compiler for the
wheel's builder) and PostgreSQL from Debian's packages on it, and Node copied
from this machine (the same major version as the Dockerfile's), each from a
recipe in this folder. Each image's tag is a digest of what made it, so each is made
once and a changed recipe makes a new one. The deployment picks them up from
``.env`` (:data:`VARIABLES`), which ``docker-compose.yml`` reads.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from butler.errors import UserError

RECIPES = Path(__file__).parent
REPOSITORY = "localhost/butler-stand-in"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
LOCAL_CAS = Path("/usr/local/share/ca-certificates")
#: The bundle update-ca-certificates writes; every client in the builds is pointed at it.
BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
TRUST = {
    "SSL_CERT_FILE": BUNDLE,
    "PIP_CERT": BUNDLE,
    "REQUESTS_CA_BUNDLE": BUNDLE,
    "NODE_EXTRA_CA_CERTS": BUNDLE,
}
#: Each image, and the ``.env`` variable docker-compose.yml reads it from.
VARIABLES = {
    "python": "PYTHON_IMAGE",
    "builder": "PYTHON_BUILD_IMAGE",
    "node": "NODE_IMAGE",
    "postgres": "POSTGRES_IMAGE",
}
#: What making one image may take (an apt-get of PostgreSQL on a slow mirror).
BUILD_TIMEOUT_S = 900


@dataclass(frozen=True)
class Engine:
    """The container engine that makes the images: podman or docker, with its environment."""

    path: str
    env: Mapping[str, str] | None = None

    def __call__(self, *args: str, stdin: object = None, timeout: float = 600) -> str:
        done = subprocess.run(
            [self.path, *args],
            env=dict(self.env) if self.env is not None else None,
            stdin=stdin,  # type: ignore[arg-type]
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise UserError(f"{self.path} {args[0]} failed: {' / '.join(said)}")
        return done.stdout

    def has(self, tag: str) -> bool:
        done = subprocess.run(
            [self.path, "image", "inspect", tag],
            env=dict(self.env) if self.env is not None else None,
            capture_output=True,
            check=False,
        )
        return done.returncode == 0


def engine(env: Mapping[str, str] | None = None) -> Engine:
    """Podman if installed, else Docker; one line naming both when neither is."""
    for name in ("podman", "docker"):
        found = shutil.which(name)
        if found:
            return Engine(found, env)
    raise UserError("neither podman nor docker is installed; install one (apt-get install podman)")


def _digest(*parts: bytes) -> str:
    sha = hashlib.sha256()
    for part in parts:
        sha.update(hashlib.sha256(part).digest())
    return sha.hexdigest()[:16]


def _local_cas() -> list[Path]:
    return sorted(LOCAL_CAS.glob("*.crt")) if LOCAL_CAS.is_dir() else []


def debian(run: Engine, say: Callable[[str], None]) -> str:
    """Debian 12 (minbase, CA certificates), trusting this machine's CAs; its tag."""
    cas = _local_cas()
    recipe = f"{SUITE} {MIRROR} minbase ca-certificates {sorted(TRUST.items())}".encode()
    tag = f"{REPOSITORY}/debian:{_digest(recipe, *(p.read_bytes() for p in cas))}"
    if run.has(tag):
        return tag
    if shutil.which("debootstrap") is None:
        raise UserError("debootstrap is not installed; apt-get install debootstrap (as root)")
    say(f"making {tag} with debootstrap (a few minutes)")
    with tempfile.TemporaryDirectory(prefix="butler-debian-") as folder:
        root = Path(folder) / "root"
        done = subprocess.run(
            ["debootstrap", "--variant=minbase", "--include=ca-certificates", SUITE, root, MIRROR],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise UserError(f"debootstrap failed: {done.stderr.strip().splitlines()[-1:]}")
        for ca in cas:
            shutil.copy(ca, root / "usr/local/share/ca-certificates" / ca.name)
        subprocess.run(["chroot", root, "update-ca-certificates"], check=True, capture_output=True)
        shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
        changes = [f"--change=ENV {name}={value}" for name, value in TRUST.items()]
        tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
        run("import", *changes, "-", tag, stdin=tar.stdout)
        tar.wait()
    return tag


def node_version(dockerfile: Path) -> str:
    """The major version of the Dockerfile's default Node image."""
    try:
        text = dockerfile.read_text(encoding="utf-8")
    except OSError:
        raise UserError(
            f"{dockerfile}: not found; run butler images in the checkout holding "
            "docker-compose.yml (or give --repo)"
        ) from None
    default = re.search(r"^ARG NODE_IMAGE=node:(\d+)\.", text, re.M)
    if default is None:
        raise UserError(f"{dockerfile}: names no ARG NODE_IMAGE=node:N... default")
    return default.group(1)


def _node_context(folder: Path, want: str) -> bytes:
    """This machine's Node and npm, copied into ``folder``; what identifies them."""
    node = shutil.which("node")
    if node is None:
        raise UserError(f"node is not installed; the Node image copies this machine's (v{want})")
    real = Path(node).resolve()
    version = subprocess.run([real, "--version"], capture_output=True, text=True).stdout.strip()
    if not version.startswith(f"v{want}."):
        raise UserError(f"the node here is {version}; the Dockerfile needs Node {want}")
    npm = real.parent.parent / "lib" / "node_modules" / "npm"
    if not (npm / "package.json").exists():
        raise UserError(f"npm is not next to {real} (expected {npm})")
    shutil.copy(real, folder / "node")
    shutil.copytree(npm, folder / "npm", symlinks=True)
    return f"{version} {(npm / 'package.json').read_text()}".encode()


def _build(
    run: Engine, name: str, base: str, context: Path, identity: bytes, say: Callable[[str], None]
) -> str:
    recipe = RECIPES / f"{name}.Containerfile"
    files = [recipe, *(p for p in RECIPES.glob(f"{name}-*") if p.is_file())]
    tag = (
        f"{REPOSITORY}/{name}:{_digest(base.encode(), identity, *(f.read_bytes() for f in files))}"
    )
    if run.has(tag):
        return tag
    say(f"making {tag}")
    for extra in files[1:]:
        shutil.copy(extra, context / extra.name)
    run(
        "build",
        "--quiet",
        "--file",
        str(recipe),
        "--build-arg",
        f"DEBIAN_IMAGE={base}",
        "--tag",
        tag,
        str(context),
        timeout=BUILD_TIMEOUT_S,
    )
    return tag


def make_images(run: Engine, dockerfile: Path, say: Callable[[str], None]) -> dict[str, str]:
    """The tags of the stand-ins for the Dockerfile's and compose file's base images.

    Those already made are found by their tag; the others are made (as root:
    debootstrap and chroot need it).
    """
    want = node_version(dockerfile)
    base = debian(run, say)
    with tempfile.TemporaryDirectory(prefix="butler-images-") as folder:
        contexts = {name: Path(folder) / name for name in VARIABLES}
        for context in contexts.values():
            context.mkdir()
        identities = {name: b"" for name in VARIABLES}
        identities["node"] = _node_context(contexts["node"], want)
        with ThreadPoolExecutor(len(contexts)) as pool:
            tags = {
                name: pool.submit(_build, run, name, base, context, identities[name], say)
                for name, context in contexts.items()
            }
            return {name: future.result() for name, future in tags.items()}


def write_env(env_file: Path, tags: Mapping[str, str]) -> None:
    """Set each image's variable in ``env_file`` (its other lines kept, in order)."""
    wanted = {VARIABLES[name]: tag for name, tag in tags.items()}
    lines = env_file.read_text(encoding="utf-8").splitlines() if env_file.exists() else []
    kept = [line for line in lines if line.split("=", 1)[0].strip() not in wanted]
    kept += [f"{name}={tag}" for name, tag in wanted.items()]
    # A new .env is private: the passwords and keys of the deployment go in it next.
    fd = os.open(env_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write("\n".join(kept) + "\n")
