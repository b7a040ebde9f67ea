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

It is the jail's init (bubblewrap's ``--as-pid-1``): what the runtime leaves
behind is reparented to it, and it reaps it, so every process of the jail is
waited for by one of the jail's own and its CPU time is charged up the chain to
the daemon. bubblewrap's own init would be one process more per session, and
bubblewrap 0.8's monitor exits without waiting for it, so the machine's init
would reap it, charged with all the jail ran. When the runtime ends, the bridge
ends whatever it left running and reaps it before exiting itself.

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
#: How long the bridge, ending, waits for the processes it killed to be reaped.
REAP_S = 5.0
#: Connections relayed at once; past it a new one is closed at once. Each holds two threads,
#: which no bound of the jail counts (the watcher counts processes, not the init's threads):
#: without it a runtime holding 16000 connections took every pid of the machine.
MAX_CONNECTIONS = 512
#: [connections relayed now], changed under its lock.
_LIVE = [0]
_LIVE_LOCK = _thread.allocate_lock()


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
        _relay(client, path, target)
    finally:
        with _LIVE_LOCK:
            _LIVE[0] -= 1


def _relay(client: _socket.socket, path: str, target: str | None) -> None:
    try:
        upstream = _tunnel(path, target)
    except OSError:
        upstream = None
    if upstream is None:
        client.close()
        return
    back = _thread.allocate_lock()
    back.acquire()
    try:
        _thread.start_new_thread(_pipe, (upstream, client, back))
    except RuntimeError:  # no thread left to start
        back.release()
    else:
        _pipe(client, upstream, None)
    back.acquire()
    client.close()
    upstream.close()


def _accept(listener: _socket.socket, path: str, target: str | None) -> None:
    while True:
        try:
            fd, _ = listener._accept()
        except OSError:  # out of descriptors: let some close (the thread would end for good)
            time.sleep(0.01)
            continue
        client = _socket.socket(listener.family, _socket.SOCK_STREAM, 0, fd)
        if listener.family != _socket.AF_UNIX:  # small requests: no wait for the last ACK
            client.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        with _LIVE_LOCK:
            full = _LIVE[0] >= MAX_CONNECTIONS
            _LIVE[0] += not full
        if full:
            client.close()
            continue
        try:
            _thread.start_new_thread(_serve, (client, path, target))
        except RuntimeError:  # no thread left to start
            client.close()
            with _LIVE_LOCK:
                _LIVE[0] -= 1


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


def _resident(pids: list[str], precise: bool) -> int:
    """The jail's memory in bytes: each process's proportional share (PSS) when
    ``precise``, so shared pages count once; else its RSS (statm, no page walk), which
    is never below it."""
    total, page = 0, os.sysconf("SC_PAGESIZE")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/{'smaps_rollup' if precise else 'statm'}", "rb") as f:
                if not precise:
                    total += int(f.read().split()[1]) * page
                    continue
                for line in f.read(4096).splitlines():
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) << 10
                        break
        except (OSError, ValueError, IndexError):
            continue  # it ended meanwhile
    return total


def _tmpfs_bytes() -> int:
    """What the files of the jail's own tmpfs mounts (/, /tmp, /dev, /run...) hold.

    They are memory no process's PSS counts: a runtime writing to /tmp went past
    max_memory_mb unseen. Bubblewrap's mounts are whole filesystems (root "/" in
    mountinfo) but for the jail's "/" (its own tmpfs's /newroot); a folder bound from a
    host tmpfs has a deeper root, not the jail's to count.
    """
    total, seen = 0, set()
    try:
        with open("/proc/self/mountinfo", "rb") as mounts:
            lines = mounts.read().splitlines()
    except OSError:
        return 0
    for line in lines:
        fields = line.split()
        if b" - tmpfs " not in line or len(fields) < 5 or fields[2] in seen:
            continue
        if fields[3] != b"/" and fields[4] != b"/":
            continue
        seen.add(fields[2])
        try:
            fs = os.statvfs(fields[4])
        except OSError:
            continue
        total += (fs.f_blocks - fs.f_bfree) * fs.f_frsize
    return total


def _watch(processes: int, memory_mb: int) -> None:
    """End the jail once it holds more processes or resident memory than its bounds."""
    while True:
        time.sleep(WATCH_S)
        pids = _jail_pids()
        if len(pids) >= processes:
            _breach(f"max_processes = {processes} ({len(pids)} processes)")
        # PSS (a page walk of every process) only when RSS, never below it, is over.
        held = _tmpfs_bytes()
        resident = held + _resident(pids, precise=False)
        if resident > memory_mb << 20:
            resident = held + _resident(pids, precise=True)
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
    _end_the_rest()
    os._exit(BREACH_STATUS)


def _end_the_rest() -> None:
    """Kill every other process of the jail and reap them (their CPU goes up the chain)."""
    if os.getpid() != 1:
        return  # not the jail's init: -1 would be every process of the user outside
    # In the jail's pid namespace, -1 is every process but its init, this bridge.
    try:
        os.kill(-1, _signal.SIGKILL)
    except OSError:
        pass  # nothing else runs
    _reap_all(time.monotonic() + REAP_S)


def _reap_all(deadline: float) -> None:
    """Reap every child (as init: every process of the jail) until none is left or ``deadline``."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if time.monotonic() > deadline:
                return  # one stuck in the kernel: the namespace's end takes it
            time.sleep(0.001)


def _exit_like(status: int) -> None:
    _ENDING.acquire()  # a breach being reported ends the bridge itself
    _end_the_rest()
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if os.getpid() == 1:
            # A pid namespace's init ignores a signal it sends itself; bubblewrap reports
            # a child killed by a signal as 128 + its number, so this reads the same.
            os._exit(128 + sig)
        if sig not in (_signal.SIGKILL, _signal.SIGSTOP):  # those keep their default anyway
            _signal.signal(sig, _signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _linger(status: int) -> None:
    """Report the runtime's end on stdout, then relay while what it left behind runs.

    As the jail's init, every process of the jail is this bridge's descendant and
    comes to it when orphaned: once it has no child left, nothing else runs.
    """
    os.write(1, f"\n{EXIT_MARKER}{status}\n".encode())
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    _exit_like(status)


def _wait_for(child: int) -> int:
    """The runtime's wait status; orphans of the jail that end meanwhile are reaped too."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            # The watcher's breach reaped the runtime and is ending the bridge (status 125):
            # wait for it. Uncaught, this thread's traceback ended the bridge with 1 first.
            _ENDING.acquire()
            os._exit(1)
        if pid == child:
            return status


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
    status = _wait_for(child)
    if linger:
        _linger(status)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
