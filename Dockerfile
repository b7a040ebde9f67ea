# syntax=docker/dockerfile:1
# One image for every butler: Python 3.11, the project with its dependencies
# from requirements.lock (hashes checked), Node 20 and the agent CLIs at exactly
# the versions butler's conformance suite verifies (clis/package.json, locked by
# clis/package-lock.json). Base images are pinned to patch releases; each is a
# build argument, so a machine without an image registry can build from base
# images it made itself (tests/deployment does). See docs/deployment.md.

ARG NODE_IMAGE=node:20.20.2-bookworm
ARG PYTHON_BUILD_IMAGE=python:3.11.13-bookworm
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

# --- The agent CLIs, installed from the lock file ------------------------------
# The full node image has the compilers that native add-ons of the CLIs need; only
# the result is copied into the slim runtime image below.
FROM ${NODE_IMAGE} AS clis
WORKDIR /opt/clis
COPY clis/package.json clis/package-lock.json ./
# npm ci installs the lock file as it is; the check fails the build if any CLI's
# installed version is not the one package.json pins.
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error \
 && node -e "const fs = require('fs'); \
const pins = JSON.parse(fs.readFileSync('package.json')).dependencies; \
for (const [name, want] of Object.entries(pins)) { \
  const got = JSON.parse(fs.readFileSync('node_modules/' + name + '/package.json')).version; \
  if (got !== want) { console.error(name + ' is ' + got + ', expected ' + want); process.exit(1); } \
}"

# --- The butler wheel, its jail's bridge compiled in ------------------------------
# pip builds the package as it would on any machine: setup.py compiles the bridge
# (butler/sandbox/bridge_*.c) into it. The full Python image has the C compiler; the
# runtime image below has none and needs none.
FROM ${PYTHON_BUILD_IMAGE} AS wheel
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY butler ./butler
RUN pip wheel --no-deps --no-cache-dir --wheel-dir /wheels .

# --- The butler image ------------------------------------------------------------
FROM ${PYTHON_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# git and tmux for builders (`butler spawn`); bubblewrap and libseccomp2 (its system-call
# filter) for the runtime jail. Inside a container the jail needs user namespaces and
# a fresh /proc, which a container refuses by default: docker-compose.yml grants
# exactly those (deploy/seccomp-bwrap.json, systempaths=unconfined); see
# docs/deployment.md.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git tmux bubblewrap libseccomp2 \
 && rm -rf /var/lib/apt/lists/*

COPY --from=clis /usr/local/bin/node /usr/local/bin/node
COPY --from=clis /opt/clis /opt/clis

WORKDIR /app
# A virtualenv of its own: the same install whatever Python the base image has
# (the official image's, or a distribution's, which refuses system-wide pip).
RUN python3 -m venv /opt/butler
ENV PATH="/opt/butler/bin:${PATH}"
# Every dependency at its locked version, each file checked against its hash.
COPY requirements.lock ./
RUN pip install --require-hashes --no-deps -r requirements.lock
COPY --from=wheel /wheels /tmp/wheels
RUN pip install --no-deps /tmp/wheels/butler-*.whl && rm -rf /tmp/wheels && pip check
# One Claude Code everywhere: `claude` (for logging in) is the one sessions run,
# bundled in claude-agent-sdk.
RUN ln -s "$(python -c 'import claude_agent_sdk, pathlib; print(pathlib.Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude")')" /usr/local/bin/claude
# The default roster; compose mounts ./roster over it, so a change needs no rebuild.
COPY roster ./roster

# A non-root user owns /data: runtime homes (CLI logins) and workspaces live there,
# on a volume, so they survive a container's restart.
RUN useradd --create-home --uid 10001 butler \
 && mkdir -p /data \
 && chown butler:butler /data

# BUTLER_PORT is left unset on purpose: it would override every butler.toml port.
# Set it (compose does) when the butler's port is not 8100, for the health check.
ENV PATH="/opt/clis/node_modules/.bin:${PATH}" \
    BUTLER_DATA_DIR=/data \
    BUTLER_HOST=0.0.0.0

USER butler
VOLUME ["/data"]
EXPOSE 8100

# Python, not curl: the slim base has no curl. A 503 (database down) fails it too.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('BUTLER_PORT', '8100') + '/health', timeout=4)"

CMD ["butler", "run", "--config", "roster/general", "--port", "8100"]
