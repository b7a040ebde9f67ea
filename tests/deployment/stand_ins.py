"""Base images made on this machine, standing in for the official ones no registry serves here.

Debian 12 comes from ``debootstrap`` and ``podman import``, with this machine's
CA certificates trusted (the package registries are reached through a proxy
that presents them); Python, Node and PostgreSQL are built on it from the
recipes in ``stand-ins/``. Each image's tag is a digest of its recipe, so a
machine builds each once and a changed recipe builds anew; delete the
``localhost/butler-stand-in/*`` images to start cold.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.deployment.engine import environment, podman, podman_path
from tests.helpers import REPO, missing_tool

RECIPES = Path(__file__).with_name("stand-ins")
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


def _digest(*parts: bytes) -> str:
    sha = hashlib.sha256()
    for part in parts:
        sha.update(hashlib.sha256(part).digest())
    return sha.hexdigest()[:16]


def _exists(tag: str) -> bool:
    done = subprocess.run([podman_path(), "image", "exists", tag], env=environment(), check=False)
    return done.returncode == 0


def _local_cas() -> list[Path]:
    return sorted(LOCAL_CAS.glob("*.crt")) if LOCAL_CAS.is_dir() else []


def debian() -> str:
    """Debian 12 (minbase, CA certificates), trusting this machine's CAs; its tag."""
    cas = _local_cas()
    recipe = f"{SUITE} {MIRROR} minbase ca-certificates {sorted(TRUST.items())}".encode()
    tag = f"{REPOSITORY}/debian:{_digest(recipe, *(p.read_bytes() for p in cas))}"
    if _exists(tag):
        return tag
    if shutil.which("debootstrap") is None:
        missing_tool("debootstrap (it makes the deployment test's base image)")
    with tempfile.TemporaryDirectory(prefix="butler-debian-") as folder:
        root = Path(folder) / "root"
        subprocess.run(
            ["debootstrap", "--variant=minbase", "--include=ca-certificates", SUITE, root, MIRROR],
            check=True,
            capture_output=True,
        )
        for ca in cas:
            shutil.copy(ca, root / "usr/local/share/ca-certificates" / ca.name)
        subprocess.run(["chroot", root, "update-ca-certificates"], check=True, capture_output=True)
        shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
        changes = [f"--change=ENV {name}={value}" for name, value in TRUST.items()]
        tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
        podman("import", *changes, "-", tag, stdin=tar.stdout)
        tar.wait()
    return tag


def _node_version() -> str:
    """The major version of the Dockerfile's default Node image."""
    default = re.search(r"^ARG NODE_IMAGE=node:(\d+)\.", (REPO / "Dockerfile").read_text(), re.M)
    assert default, "the Dockerfile names no NODE_IMAGE default"
    return default.group(1)


def _node_context(folder: Path) -> bytes:
    """This machine's Node and npm, copied into ``folder``; what identifies them."""
    node = shutil.which("node")
    if node is None:
        missing_tool("node")
    real = Path(node).resolve()
    version = subprocess.run([real, "--version"], capture_output=True, text=True).stdout.strip()
    want = _node_version()
    assert version.startswith(f"v{want}."), f"the Node here is {version}; the image needs {want}"
    npm = real.parent.parent / "lib" / "node_modules" / "npm"
    assert (npm / "package.json").exists(), f"npm is not next to {real}"
    shutil.copy(real, folder / "node")
    shutil.copytree(npm, folder / "npm", symlinks=True)
    return f"{version} {(npm / 'package.json').read_text()}".encode()


def _build(name: str, base: str, context: Path, identity: bytes) -> str:
    recipe = RECIPES / f"{name}.Containerfile"
    files = [recipe, *(p for p in RECIPES.glob(f"{name}-*") if p.is_file())]
    tag = (
        f"{REPOSITORY}/{name}:{_digest(base.encode(), identity, *(f.read_bytes() for f in files))}"
    )
    if _exists(tag):
        return tag
    for extra in files[1:]:
        shutil.copy(extra, context / extra.name)
    podman(
        "build",
        "--quiet",
        "--file",
        str(recipe),
        "--build-arg",
        f"DEBIAN_IMAGE={base}",
        "--tag",
        tag,
        str(context),
        timeout=900,
    )
    return tag


def stand_ins() -> dict[str, str]:
    """The tags of the stand-ins for the Dockerfile's and compose file's base images."""
    base = debian()
    with tempfile.TemporaryDirectory(prefix="butler-stand-ins-") as folder:
        names = ("python", "builder", "node", "postgres")
        contexts = {name: Path(folder) / name for name in names}
        for context in contexts.values():
            context.mkdir()
        node = _node_context(contexts["node"])
        identities = {"python": b"", "builder": b"", "node": node, "postgres": b""}
        with ThreadPoolExecutor(len(names)) as pool:
            tags = {
                name: pool.submit(_build, name, base, context, identities[name])
                for name, context in contexts.items()
            }
            return {name: future.result() for name, future in tags.items()}
