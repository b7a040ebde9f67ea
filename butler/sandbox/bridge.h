/* What the C bridge's files share: the state more than one of them reads, and their calls.

   The bridge is one program in several files, each one concept (bridge_main.c lists
   them and says what the bridge is). This header is included first by each of them: it
   asks for the GNU extensions (accept4, MSG_CMSG_CLOEXEC, environ) before any system
   header is read. sandbox/bridge_binary.py compiles every bridge_*.c together and names the
   binary by a hash of each of them and this header, so an edit of any one builds a new
   binary. */

#ifndef BUTLER_BRIDGE_H
#define BUTLER_BRIDGE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_LISTENERS 512

/* The warm hand-over (bridge_attach.c sends it, bridge_warm.c reads it): a head of four
   words (magic, argument count, variable count, bytes), the streams as SCM_RIGHTS, the
   NUL-terminated strings, then the bridge's one-byte acknowledgement. */
#define TAKE_MAGIC 0x62746c31u /* "btl1" */
#define TAKE_LIMIT (4 << 20)
#define TAKE_STRINGS 65536
#define TAKE_ACK "k"

/* The egress proxy's Unix socket (outside the jail, bound in): every connection goes there. */
extern const char *egress_path;
/* The runtime, once forked: the signals the bridge is sent or relayed go to it. */
extern volatile pid_t child;
/* A warm bridge's connection to its session's attach client: how the run ended goes there. */
extern int control_fd;
/* Held by whoever is ending the bridge (a breach, the runtime's end, the attach client's),
   so one reason is reported and the others wait for the exit. */
extern pthread_mutex_t ending;
/* [butler.sandbox] max_processes and max_memory_mb, from limits=. */
extern long processes_bound, memory_mb_bound;

struct listener {
    int fd;
    char target[32]; /* "127.0.0.1:PORT" for a forward, "" for the proxy port */
};

/* A warm bridge's session: the runtime's argv and environment, and its standard streams,
   handed over by the attach client. */
struct take {
    char **argv;
    char **env;
    int fds[3];
};

/* bridge_io.c */
int write_all(int fd, const char *data, size_t len);
int read_exact(int fd, char *into, size_t len);

/* bridge_relay.c */
int listen_on(const char *host, int port);
void *accept_loop(void *arg);
void start_detached(void *(*run)(void *), void *arg);

/* bridge_proc.c */
int is_other(const char *name, const char *own);
long long pss_bytes(const char *pid);
long long rss_bytes(const char *pid);
long long memory_of(DIR *proc, const char *own, long long (*of)(const char *));
long long tmpfs_bytes(void);

/* bridge_bounds.c */
void *watch(void *unused);
void limit_self(void);
void breach(const char *what) __attribute__((noreturn));

/* bridge_cgroup.c */
extern int cgroup_procs;
int add_watch(const char *spec);
int bounds_held(void);
void check_held(void);
void *watch_held(void *unused);
void join_cgroup(void);

/* bridge_init.c */
void end_the_rest(void);
void leave(int code) __attribute__((noreturn));
void exit_like(int status) __attribute__((noreturn));

/* bridge_warm.c */
int wait_for_take(int listener, int lifeline, struct take *take);
void *control_loop(void *unused);

/* bridge_attach.c */
int attach_main(int argc, char **argv);

#endif
