/* The jail's bridge: the first process of every jail, and its init.

   A jail has no network of its own. The bridge listens on the jail's loopback at the
   ports the runtime was told to use (its butler's MCP address, its model API) and
   relays each connection over SOCKET, a Unix socket bound outside the jail, to the
   daemon's egress proxy, which lets through only what the session may reach. It starts
   the runtime, holds its bounds (max_processes, max_memory_mb), reaps what the runtime
   leaves, ends the rest when the runtime ends, and exits as the runtime did. It is
   compiled when butler is installed (sandbox/bridge_binary.py), never during a session:
   starting an interpreter in every jail was most of what a Python bridge cost. Only
   libc and POSIX threads.

   Usage: bridge SOCKET PROXY_PORT FORWARDS [limits=PROCESSES,MEMORY_MB] [cgroup=FD
                 watch=FD:KEY:BOUND...] [linger] -- ARGV...
          bridge SOCKET PROXY_PORT FORWARDS [limits=...] warm=LISTENER,LIFELINE --
          bridge attach SOCKET ENV_FILE NAMES COLD -- ARGV...

   A warm bridge (a jail of the daemon's pool, sandbox/pool.py) is made before any session
   asks for it: it listens on the jail's loopback and waits on LISTENER (a Unix socket the
   daemon bound outside the jail, in the jail's private folder) for the one session it
   will run, or for LIFELINE (a pipe the daemon holds) to close, which ends it unused.
   The session's launch script runs this same binary as "attach", outside the jail: it
   hands the warm bridge its standard streams, the runtime's argv and its
   environment (ENV_FILE, NUL-separated, written by the daemon for this session, plus the
   variables NAMES lists from its own), relays terminating signals, and exits as the
   runtime did. One take per jail: the bridge closes LISTENER once it accepted. */

/* The bridge's files, one concept each (bridge.h holds what they share):
   bridge_main.c    the command line, the runtime's start and its end
   bridge_relay.c   the loopback ports, relayed to the egress proxy
   bridge_bounds.c  max_processes and max_memory_mb: the watcher and the rlimits
   bridge_cgroup.c  the same bounds held by the session's cgroup, where there is one
   bridge_proc.c    what the watcher reads of the jail's /proc
   bridge_init.c    the jail's init: reaping, ending the rest, exiting as the runtime did
   bridge_warm.c    a warm bridge waiting for its session and taking it
   bridge_attach.c  the attach client handing a session to a warm bridge
   bridge_io.c      whole writes and reads */

#include "bridge.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* With linger, the line that tells the daemon how the runtime itself ended. */
#define EXIT_MARKER "\0butler-jail-exit "
#define EXIT_MARKER_LEN 18

volatile pid_t child = -1;

static void forward_signal(int sig) {
    if (child > 0) kill(child, sig);
}

static pid_t wait_child(pid_t pid, int *status) {
    for (;;) {
        pid_t got = waitpid(-1, status, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 || got == pid) return got;
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "attach") == 0) return attach_main(argc, argv);
    int split = 1, warm = 0;
    while (split < argc && strcmp(argv[split], "--") != 0) split++;
    for (int i = 4; i < split; i++) warm |= strncmp(argv[i], "warm=", 5) == 0;
    /* A warm bridge gets its runtime's argv from its session, never on its command line. */
    if (split >= argc || split < 4 || (!warm && split + 1 >= argc)) {
        const char *usage = "butler jail: bridge SOCKET PROXY_PORT FORWARDS [options] -- ARGV\n";
        write_all(2, usage, strlen(usage));
        return 2;
    }
    egress_path = argv[1];
    int linger = 0, bounded = 0, warm_listener = -1, lifeline = -1;
    for (int i = 4; i < split; i++) {
        if (strcmp(argv[i], "linger") == 0) linger = 1;
        if (strncmp(argv[i], "warm=", 5) == 0 &&
            sscanf(argv[i] + 5, "%d,%d", &warm_listener, &lifeline) != 2)
            return 2;
        if (strncmp(argv[i], "limits=", 7) == 0 &&
            sscanf(argv[i] + 7, "%ld,%ld", &processes_bound, &memory_mb_bound) == 2)
            bounded = 1;
        if (strncmp(argv[i], "cgroup=", 7) == 0 && sscanf(argv[i] + 7, "%d", &cgroup_procs) != 1)
            return 2;
        if (strncmp(argv[i], "watch=", 6) == 0 && add_watch(argv[i] + 6) != 0) return 2;
    }
    /* With its cgroup, the kernel holds the bounds: neither the watcher nor the rlimits. */
    int held = bounded && bounds_held();
    if (cgroup_procs >= 0) fcntl(cgroup_procs, F_SETFD, FD_CLOEXEC);
    static struct listener listeners[MAX_LISTENERS];
    int count = 0;
    listeners[count].fd = listen_on("127.0.0.1", atoi(argv[2]));
    listeners[count++].target[0] = '\0';
    char *forwards = strdup(argv[3]);
    for (char *port = strtok(forwards, ","); port != NULL && count + 2 <= MAX_LISTENERS; port = strtok(NULL, ",")) {
        int number = atoi(port);
        for (int v6 = 0; v6 < 2; v6++) {
            listeners[count].fd = listen_on(v6 ? "::1" : "127.0.0.1", number);
            snprintf(listeners[count++].target, sizeof listeners[0].target, "127.0.0.1:%d", number);
        }
    }
    signal(SIGPIPE, SIG_IGN); /* a peer gone mid-write is an error return, not the end */
    char **run = argv + split + 1;
    struct take take = {NULL, NULL, {-1, -1, -1}};
    if (warm) {
        if (wait_for_take(warm_listener, lifeline, &take) != 0) _exit(1);
        run = take.argv;
    }
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        for (int i = 0; i < count; i++)
            if (listeners[i].fd >= 0) close(listeners[i].fd);
        if (warm) {
            for (int i = 0; i < 3; i++) dup2(take.fds[i], i);
            environ = take.env; /* execvp finds the program on the session's PATH */
        }
        if (held)
            join_cgroup();
        else if (bounded)
            limit_self();
        execvp(run[0], run);
        char line[4200];
        int len = snprintf(line, sizeof line, "butler jail: cannot start %s: %s\n", run[0], strerror(errno));
        write_all(2, line, (size_t)len);
        _exit(127);
    }
    if (pid < 0) return 1;
    child = pid;
    if (cgroup_procs >= 0) close(cgroup_procs); /* the runtime's copy is its way in */
    /* Only the runtime speaks on stdout; the bridge must not hold the pipe open either. */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    dup2(null, 0);
    if (!linger) dup2(null, 1);
    if (warm) {
        /* The bridge's own lines (a bound passed) go where the runtime's errors go. */
        dup2(take.fds[2], 2);
        for (int i = 0; i < 3; i++)
            if (take.fds[i] > 2) close(take.fds[i]);
        start_detached(control_loop, NULL);
    }
    struct sigaction forward = {.sa_handler = forward_signal, .sa_flags = SA_RESTART};
    sigemptyset(&forward.sa_mask);
    sigaction(SIGTERM, &forward, NULL);
    sigaction(SIGINT, &forward, NULL);
    sigaction(SIGHUP, &forward, NULL);
    for (int i = 0; i < count; i++)
        if (listeners[i].fd >= 0) start_detached(accept_loop, &listeners[i]);
    if (held)
        start_detached(watch_held, NULL);
    else if (bounded)
        start_detached(watch, NULL);
    int status = 0;
    if (wait_child(pid, &status) < 0) {
        /* The watcher's breach reaped the runtime and is ending the bridge (125): wait for
           it, rather than report (with linger, write the marker of) a status of 0. */
        pthread_mutex_lock(&ending);
        leave(1);
    }
    if (held) check_held(); /* a kill of the kernel's whose event is not in yet */
    if (linger) {
        /* The marker holds a NUL, so it is written in parts. */
        char line[32];
        int len = snprintf(line, sizeof line, "%d\n", status);
        write_all(1, "\n", 1);
        write_all(1, EXIT_MARKER, EXIT_MARKER_LEN);
        write_all(1, line, (size_t)len);
        dup2(null, 1);
        /* As the jail's init, every process of the jail comes to it when orphaned: once it
           has no child left, nothing else runs. */
        while (waitpid(-1, NULL, 0) >= 0 || errno == EINTR) {
        }
    }
    exit_like(status);
    return 0;
}
