"""Inside the jail: loopback ports that lead, through one Unix socket, to the daemon's proxy.

Run as ``python -I -S bridge.py SOCKET PROXY_PORT FORWARDS -- ARGV...`` as the
jail's first process. The jail has no network but loopback, so this is the
only way out: it listens on ``127.0.0.1:PROXY_PORT`` (the runtime's
``HTTPS_PROXY``; bytes pass untouched to the proxy) and on each port of
``FORWARDS`` (comma-separated), which stand for the same port on the host's
loopback (the butler's MCP server, a local model server) so a runtime's
configs keep their ``http://127.0.0.1:PORT`` URLs. Those connections ask the
proxy for ``127.0.0.1:PORT`` first; the proxy decides. Then it runs ARGV as
its child, passes terminating signals on, and exits as the child did.

With ``limits=PROCESSES,MEMORY_MB`` it holds the jail to them (``[butler.sandbox]
max_processes`` and ``max_memory_mb``): a watcher counts the jail's processes
and the memory they hold, and past either writes one line on stderr naming
the setting and ends every process of the jail, so a fork bomb or a memory hog
ends its own session and nothing else. The runtime also starts under
``RLIMIT_DATA`` (no one process allocates past twice the bound) and ``RLIMIT_NPROC``,
which the kernel counts per user namespace, so for a daemon not run as root it
stops a fork bomb even between two looks of the watcher (root is exempt from it,
hence the watcher).

With ``linger`` (a call that leaves a background agent running, as an
external runtime's ``spawn`` does) it reports the runtime's exit status on
stdout instead, closes it, and keeps relaying until nothing else runs in
the jail.

Standard library only, never butler: it starts in a jail that holds no butler code.
"""

from __future__ import annotations

# The C modules behind socket, threading and signal: the pure-Python ones import
# enum and friends, which costs more than the whole bridge does at start-up.
import _signal
import _socket
import _thread
import os
import sys
import time

#: With ``linger``, the line that tells the daemon how the runtime itself ended.
EXIT_MARKER = "\x00butler-jail-exit "
CHUNK = 65536
HEAD_LIMIT = 16384
#: How often the watcher looks at the jail's processes, in seconds.
WATCH_S = 0.05
#: RLIMIT_NPROC counts threads too (the bridge's among them): a margin above the bound, so
#: the watcher, which ends the session with a reason, finds the breach first.
NPROC_MARGIN = 64
#: RLIMIT_DATA is this many times the memory bound: the watcher, which says why, ends a
#: session first, and no one process can allocate past it between two looks.
DATA_FACTOR = 2
#: How the jail ends when it went past a bound (a shell's "killed" statuses are above).
BREACH_STATUS = 125


def _pipe(src: _socket.socket, dst: _socket.socket, done: _thread.LockType | None) -> None:
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    try:
        dst.shutdown(_socket.SHUT_WR)
    except OSError:
        pass
    if done is not None:
        done.release()


def _tunnel(path: str, target: str | None) -> _socket.socket | None:
    """A connection to the proxy; for a forward, already through its CONNECT."""
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    upstream.connect(path)
    if target is None:
        return upstream
    upstream.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head and len(head) < HEAD_LIMIT:
        chunk = upstream.recv(1024)
        if not chunk:
            break
        head += chunk
    if not head.startswith((b"HTTP/1.1 200", b"HTTP/1.0 200")):
        upstream.close()
        return None
    return upstream


def _serve(client: _socket.socket, path: str, target: str | None) -> None:
    try:
        upstream = _tunnel(path, target)
    except OSError:
        upstream = None
    if upstream is None:
        client.close()
        return
    back = _thread.allocate_lock()
    back.acquire()
    _thread.start_new_thread(_pipe, (upstream, client, back))
    _pipe(client, upstream, None)
    back.acquire()
    client.close()
    upstream.close()


def _accept(listener: _socket.socket, path: str, target: str | None) -> None:
    while True:
        fd, _ = listener._accept()
        client = _socket.socket(listener.family, _socket.SOCK_STREAM, 0, fd)
        _thread.start_new_thread(_serve, (client, path, target))


def _listen(host: str, port: int) -> _socket.socket | None:
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    try:
        sock = _socket.socket(family, _socket.SOCK_STREAM)
        sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        return None
    return sock


def _bounds(args: list[str]) -> tuple[int, int] | None:
    """``limits=PROCESSES,MEMORY_MB`` among the options, if there."""
    for arg in args:
        if arg.startswith("limits="):
            processes, memory_mb = arg.removeprefix("limits=").split(",")
            return int(processes), int(memory_mb)
    return None


def _limit_self(processes: int, memory_mb: int) -> None:
    """The runtime's own rlimits, set in the child before it becomes the runtime."""
    import resource  # a C module of the standard library; only the child pays for it

    for which, bound in (
        (resource.RLIMIT_NPROC, processes + NPROC_MARGIN),
        (resource.RLIMIT_DATA, (memory_mb << 20) * DATA_FACTOR),
    ):
        _, hard = resource.getrlimit(which)
        bound = bound if hard == resource.RLIM_INFINITY else min(bound, hard)
        try:
            resource.setrlimit(which, (bound, bound))
        except (OSError, ValueError):
            pass  # the watcher holds the bound all the same


def _jail_pids() -> list[str]:
    own = {"1", str(os.getpid())}
    return [name for name in os.listdir("/proc") if name.isdigit() and name not in own]


def _resident(pids: list[str]) -> int:
    """The jail's memory in bytes: each process's proportional share (PSS), so pages its
    processes share (libraries, a fork's copy-on-write) count once, not once per process."""
    total = 0
    for pid in pids:
        try:
            fd = os.open(f"/proc/{pid}/smaps_rollup", os.O_RDONLY)
        except OSError:
            continue  # it ended meanwhile
        try:
            for line in os.read(fd, 4096).splitlines():
                if line.startswith(b"Pss:"):
                    total += int(line.split()[1]) << 10
                    break
        except (OSError, ValueError, IndexError):
            pass
        finally:
            os.close(fd)
    return total


def _watch(processes: int, memory_mb: int) -> None:
    """End the jail once it holds more processes or resident memory than its bounds."""
    while True:
        time.sleep(WATCH_S)
        pids = _jail_pids()
        if len(pids) >= processes:
            _breach(f"max_processes = {processes} ({len(pids)} processes)")
        resident = _resident(pids)
        if resident > memory_mb << 20:
            _breach(f"max_memory_mb = {memory_mb} ({resident >> 20} MiB held)")


#: Held by whichever ends the bridge first: the runtime's exit, or the watcher's breach.
_ENDING = _thread.allocate_lock()


def _breach(what: str) -> None:
    _ENDING.acquire()
    os.write(
        2,
        f"butler jail: the session went past [butler.sandbox] {what} in butler.toml; "
        "every process of its jail was ended\n".encode(),
    )
    # In the jail's pid namespace, -1 is every process but its init and this bridge.
    os.kill(-1, _signal.SIGKILL)
    os._exit(BREACH_STATUS)


def _exit_like(status: int) -> None:
    _ENDING.acquire()  # a breach being reported ends the bridge itself
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (_signal.SIGKILL, _signal.SIGSTOP):  # those keep their default anyway
            _signal.signal(sig, _signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _others_alive() -> bool:
    """Whether the jail holds a process besides its init and this bridge."""
    own = {"1", str(os.getpid())}
    return any(name.isdigit() and name not in own for name in os.listdir("/proc"))


def _linger(status: int) -> None:
    """Report the runtime's end on stdout, then relay while what it left behind runs."""
    os.write(1, f"\n{EXIT_MARKER}{status}\n".encode())
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    while _others_alive():
        time.sleep(0.2)
    _exit_like(status)


def main(args: list[str]) -> None:
    """Listen, start the runtime, relay until it exits (with ``linger``: until all have)."""
    split = args.index("--")
    path, proxy_port, forwards = args[0], int(args[1]), args[2]
    linger = "linger" in args[3:split]
    bounds = _bounds(args[3:split])
    argv = args[split + 1 :]
    listeners = [(_listen("127.0.0.1", proxy_port), None)]
    for port in filter(None, forwards.split(",")):
        target = f"127.0.0.1:{int(port)}"
        listeners.append((_listen("127.0.0.1", int(port)), target))
        listeners.append((_listen("::1", int(port)), target))
    child = os.fork()
    if child == 0:
        for listener, _ in listeners:
            if listener is not None:
                listener.close()
        try:
            if bounds is not None:
                _limit_self(*bounds)
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"butler jail: cannot start {argv[0]}: {exc.strerror}", file=sys.stderr)
        os._exit(127)
    # Only the runtime speaks on stdout; the bridge must not hold the pipe open either.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    if not linger:
        os.dup2(null, 1)
    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(sig, lambda signum, _frame: os.kill(child, signum))
    for listener, target in listeners:
        if listener is not None:
            _thread.start_new_thread(_accept, (listener, path, target))
    if bounds is not None:
        _thread.start_new_thread(_watch, bounds)
    _, status = os.waitpid(child, 0)
    if linger:
        _linger(status)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
