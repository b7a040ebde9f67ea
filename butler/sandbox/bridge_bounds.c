/* The jail's bounds ([butler.sandbox] max_processes, max_memory_mb): the watcher and rlimits.

   The watcher looks at the jail every WATCH_NS and, past a bound, says which on stderr
   and ends every process of the jail, so a fork bomb or a memory hog ends its own
   session and nothing else. The rlimits the runtime starts under stop a fork bomb or an
   allocation even between two looks, set above the bounds so the watcher, which says
   why, finds a breach first. */

#include "bridge.h"

#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define WATCH_NS 50000000L
/* RLIMIT_NPROC counts threads too (the bridge's among them): a margin above the bound. */
#define NPROC_MARGIN 64
/* RLIMIT_DATA is this many times the memory bound. */
#define DATA_FACTOR 2
/* How the jail ends when it went past a bound (a shell's "killed" statuses are above). */
#define BREACH_STATUS 125

long processes_bound, memory_mb_bound;

void breach(const char *what) {
    pthread_mutex_lock(&ending);
    char line[512];
    int len = snprintf(line, sizeof line,
                       "butler jail: the session went past [butler.sandbox] %s in butler.toml; "
                       "every process of its jail was ended\n",
                       what);
    write_all(2, line, (size_t)len);
    end_the_rest();
    leave(BREACH_STATUS);
}

/* End the jail once it holds more processes or resident memory (PSS) than its bounds. */
void *watch(void *unused) {
    (void)unused;
    char own[16];
    snprintf(own, sizeof own, "%d", (int)getpid());
    struct timespec pause = {0, WATCH_NS};
    for (;;) {
        nanosleep(&pause, NULL);
        DIR *proc = opendir("/proc");
        if (proc == NULL) continue;
        /* Counted first, and alone: a fork bomb is found in one pass over /proc, never
           behind a read of every process's memory. */
        long count = 0;
        struct dirent *entry;
        while ((entry = readdir(proc)) != NULL)
            /* At the bound, stop looking: a fork bomb adds entries as fast as they are
               read, and the machine ran out of pids before the end of /proc was reached. */
            if ((count += is_other(entry->d_name, own)) >= processes_bound) break;
        char what[128];
        if (count >= processes_bound) {
            closedir(proc);
            snprintf(what, sizeof what, "max_processes = %ld (%ld processes)", processes_bound, count);
            breach(what);
        }
        /* PSS is read only when RSS, which never undercounts it, is over the bound: its
           page walk cost 4.5 ms of CPU per look at a 180 MB CLI, a tenth of a core. */
        long long bound = (long long)memory_mb_bound << 20, held = tmpfs_bytes();
        long long resident = held + memory_of(proc, own, rss_bytes);
        if (resident > bound) resident = held + memory_of(proc, own, pss_bytes);
        closedir(proc);
        if (resident > bound) {
            snprintf(what, sizeof what, "max_memory_mb = %ld (%lld MiB held)", memory_mb_bound, resident >> 20);
            breach(what);
        }
    }
    return NULL;
}

/* The runtime's own rlimits, set in the child before it becomes the runtime. */
void limit_self(void) {
    int which[] = {RLIMIT_NPROC, RLIMIT_DATA};
    rlim_t bounds[] = {processes_bound + NPROC_MARGIN, ((rlim_t)memory_mb_bound << 20) * DATA_FACTOR};
    for (size_t i = 0; i < 2; i++) {
        struct rlimit current;
        if (getrlimit(which[i], &current) != 0) continue;
        rlim_t bound = bounds[i];
        if (current.rlim_max != RLIM_INFINITY && current.rlim_max < bound) bound = current.rlim_max;
        struct rlimit wanted = {bound, bound};
        setrlimit(which[i], &wanted); /* the watcher holds the bound all the same */
    }
}
