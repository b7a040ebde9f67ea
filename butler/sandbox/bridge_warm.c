/* A warm bridge's side of the hand-over: waiting for its one session, and taking it.

   A warm jail (sandbox/pool.py) is started before any session asks for it; its bridge
   waits on LISTENER for the session's attach client (bridge_attach.c) or for LIFELINE to
   close. What the client hands over is checked whole (magic, counts, sizes, exactly
   three streams) before anything of it runs, and acknowledged only then. */

#include "bridge.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A warm bridge's connection to its session's attach client: how the run ended goes there. */
int control_fd = -1;

/* Split ``count`` NUL-terminated strings of ``data`` (``len`` bytes) into ``out``. */
static int split_strings(char *data, uint32_t len, uint32_t count, char **out) {
    uint32_t found = 0;
    for (uint32_t at = 0; at < len && found < count; found++) {
        out[found] = data + at;
        char *end = memchr(data + at, '\0', len - at);
        if (end == NULL) return -1;
        at = (uint32_t)(end - data) + 1;
    }
    return found == count ? 0 : -1;
}

/* The one session's message on ``conn``: its streams (SCM_RIGHTS), then its strings. */
static int read_take(int conn, struct take *take) {
    uint32_t head[4];
    union { char space[CMSG_SPACE(3 * sizeof(int))]; struct cmsghdr align; } control;
    struct iovec iov = {head, sizeof head};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space,
                         .msg_controllen = sizeof control.space};
    ssize_t got = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    int count = 0;
    if (c != NULL && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        memcpy(take->fds, CMSG_DATA(c), sizeof(int) * (size_t)(count < 3 ? count : 3));
    }
    if (got != (ssize_t)sizeof head || count != 3 || (msg.msg_flags & MSG_CTRUNC)) return -1;
    uint32_t nargs = head[1], nenv = head[2], len = head[3];
    if (head[0] != TAKE_MAGIC || len > TAKE_LIMIT || nargs < 1 || nargs > TAKE_STRINGS ||
        nenv > TAKE_STRINGS)
        return -1;
    char *data = malloc((size_t)len + 1);
    take->argv = calloc((size_t)nargs + 1, sizeof(char *));
    take->env = calloc((size_t)nenv + 1, sizeof(char *));
    if (data == NULL || take->argv == NULL || take->env == NULL || read_exact(conn, data, len) != 0)
        return -1;
    data[len] = '\0';
    if (split_strings(data, len, nargs, take->argv) != 0) return -1;
    uint32_t used = 0;
    for (uint32_t i = 0; i < nargs; i++) used += (uint32_t)strlen(take->argv[i]) + 1;
    return split_strings(data + used, len - used, nenv, take->env);
}

/* Wait until a session takes this warm jail (its control connection, now ``control_fd``)
   or the daemon closes ``lifeline``, which ends the jail unused. */
int wait_for_take(int listener, int lifeline, struct take *take) {
    struct pollfd polls[2] = {{listener, POLLIN, 0}, {lifeline, POLLIN, 0}};
    for (;;) {
        int n = poll(polls, 2, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || polls[1].revents != 0) return -1;
        if (polls[0].revents & POLLIN) break;
        if (polls[0].revents != 0) return -1;
    }
    int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    close(listener); /* one session per jail, ever */
    close(lifeline);
    /* The acknowledgement tells the attach client its session is this jail's: until it
       has it, nothing of the session ran here and its own jail can run it instead. */
    if (conn < 0 || read_take(conn, take) != 0 || write_all(conn, TAKE_ACK, 1) != 0) return -1;
    control_fd = conn;
    return 0;
}

/* Signals the attach client relays; its end (killed with its group) ends the whole jail. */
void *control_loop(void *unused) {
    (void)unused;
    for (;;) {
        unsigned char sig;
        ssize_t n = read(control_fd, &sig, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if ((sig == SIGTERM || sig == SIGINT || sig == SIGHUP) && child > 0) kill(child, sig);
    }
    pthread_mutex_lock(&ending);
    end_the_rest();
    _exit(128 + SIGKILL);
}
