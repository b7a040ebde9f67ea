/* Bounds the kernel holds: the session's cgroup (sandbox/cgroups.py), where there is one.

   The daemon made a cgroup for the session with pids.max and memory.max at its bounds
   and handed the bridge three descriptors it opened outside the jail: the cgroup's
   cgroup.procs (cgroup=FD), through which the runtime joins it before it starts, and
   the event files to wait on (watch=FD:KEY:BOUND, e.g. pids.events' "max" for
   max_processes, memory.events' "oom_kill" for max_memory_mb). The kernel refuses the
   process past the bound and kills for the memory past it; the bridge is woken when a
   counter moves (poll's POLLPRI: nothing is looked at between two events) and ends the
   jail naming the bound, as the /proc watcher (bridge_bounds.c) does where no cgroup is.
   The bridge itself stays outside the cgroup: its relay threads are no process of the
   runtime's. */

#include "bridge.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_WATCHED 4

int cgroup_procs = -1;

struct watched {
    int fd;
    char key[32];
    char bound[16]; /* "processes" or "memory" */
};

static struct watched watched[MAX_WATCHED];
static int watched_count;

/* FD:KEY:BOUND, from watch=. 0 when understood. */
int add_watch(const char *spec) {
    struct watched *w = &watched[watched_count];
    if (watched_count == MAX_WATCHED ||
        sscanf(spec, "%d:%31[a-z_]:%15[a-z]", &w->fd, w->key, w->bound) != 3 || w->fd < 0)
        return -1;
    fcntl(w->fd, F_SETFD, FD_CLOEXEC); /* the runtime never holds it */
    watched_count++;
    return 0;
}

int bounds_held(void) { return cgroup_procs >= 0 && watched_count > 0; }

/* The value of KEY in an event file ("KEY N" lines); reading it re-arms its POLLPRI. */
static long long counter(const struct watched *w) {
    char data[1024];
    ssize_t n = pread(w->fd, data, sizeof data - 1, 0);
    if (n <= 0) return 0;
    data[n] = '\0';
    size_t len = strlen(w->key);
    for (char *line = data; line != NULL && *line; line = strchr(line, '\n')) {
        if (*line == '\n') line++;
        if (strncmp(line, w->key, len) == 0 && line[len] == ' ') return strtoll(line + len + 1, NULL, 10);
    }
    return 0;
}

/* End the jail if a watched counter moved: at every event, and once more as the runtime
   ends (the kernel's kill may reach the bridge's wait before its event does). */
void check_held(void) {
    for (int i = 0; i < watched_count; i++) {
        if (counter(&watched[i]) <= 0) continue;
        char what[160];
        if (strcmp(watched[i].bound, "memory") == 0)
            snprintf(what, sizeof what, "max_memory_mb = %ld (the kernel ended a process past it)", memory_mb_bound);
        else
            snprintf(what, sizeof what, "max_processes = %ld (the kernel refused one more)", processes_bound);
        breach(what);
    }
}

void *watch_held(void *unused) {
    (void)unused;
    struct pollfd polled[MAX_WATCHED];
    for (int i = 0; i < watched_count; i++) polled[i] = (struct pollfd){watched[i].fd, POLLPRI, 0};
    for (;;) {
        check_held();
        if (poll(polled, (nfds_t)watched_count, -1) < 0 && errno != EINTR) return NULL;
    }
}

/* In the runtime's process before it starts: into the session's cgroup, for good. */
void join_cgroup(void) {
    if (write(cgroup_procs, "0", 1) != 1) {
        const char *line = "butler jail: cannot join the session's cgroup\n";
        write_all(2, line, strlen(line));
        _exit(126);
    }
    close(cgroup_procs);
}
