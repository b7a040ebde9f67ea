/* The bridge as the jail's init (bubblewrap's --as-pid-1): reaping, and how it exits.

   What the runtime leaves behind is reparented to the bridge, which reaps it, so every
   process of the jail is waited for by one of the jail's own and its CPU is charged up
   the chain to the daemon. However the bridge ends (the runtime's end, a breach, a warm
   jail's attach client gone) it ends every other process of the jail first, and exits
   as bubblewrap would report the runtime's end. */

#include "bridge.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long the bridge, ending, waits for the processes it killed to be reaped. */
#define REAP_S 5

pthread_mutex_t ending = PTHREAD_MUTEX_INITIALIZER;

/* Reap every child (as init: every process of the jail) until none is left or the deadline. */
static void reap_all(void) {
    struct timespec start, now, pause = {0, 1000000L};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);
        if (pid < 0 && errno == EINTR) continue;
        if (pid < 0) return; /* ECHILD: none left */
        if (pid == 0) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - start.tv_sec > REAP_S) return; /* the namespace's end takes it */
            nanosleep(&pause, NULL);
        }
    }
}

/* Kill every other process of the jail and reap them (their CPU goes up the chain). */
void end_the_rest(void) {
    if (getpid() != 1) return; /* not the jail's init: -1 would be every process of the user */
    kill(-1, SIGKILL);         /* in the jail's pid namespace: every process but this init */
    reap_all();
}

/* Exit with ``code``; a warm bridge first tells its attach client, which exits the same. */
void leave(int code) {
    if (control_fd >= 0) {
        int32_t status = code;
        write_all(control_fd, (const char *)&status, sizeof status);
    }
    _exit(code);
}

void exit_like(int status) {
    pthread_mutex_lock(&ending); /* a breach being reported ends the bridge itself */
    end_the_rest();
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        /* A pid namespace's init ignores a signal it sends itself; bubblewrap reports a
           child killed by a signal as 128 + its number, so this reads the same. */
        if (getpid() == 1) leave(128 + sig);
        signal(sig, SIG_DFL);
        kill(getpid(), sig);
    }
    leave(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
