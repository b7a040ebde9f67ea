/* The attach client ("bridge attach"): a session's launch script handing it to a warm jail.

   It runs outside the jail, as the session's process: it hands the warm bridge its
   standard streams, the runtime's argv and environment, relays terminating signals and
   exits as the runtime did. Until the bridge acknowledges, nothing of the session ran
   there: on any failure before that it runs the session's own jail instead (COLD), so a
   session never fails for want of a warm jail. */

#include "bridge.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int attach_fd = -1;

static void relay_signal(int sig) {
    unsigned char byte = (unsigned char)sig;
    if (write(attach_fd, &byte, 1) < 0) { /* the bridge is gone: its status says why */ }
}

static int attach_fail(const char *what) {
    char line[512];
    int len = snprintf(line, sizeof line, "butler jail: cannot start the runtime in its warm jail: %s: %s\n",
                       what, strerror(errno));
    write_all(2, line, (size_t)len);
    return 127;
}

/* ENV_FILE's entries, and each variable of NAMES (comma-separated) this process has. */
static char *attach_env(const char *path, const char *names, size_t *len, uint32_t *count) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat found;
    if (fd < 0 || fstat(fd, &found) != 0 || !S_ISREG(found.st_mode) || found.st_size > TAKE_LIMIT / 2)
        return NULL;
    size_t size = (size_t)found.st_size, extra = 0;
    char *copy = strdup(names);
    for (char *name = strtok(copy, ","); name != NULL; name = strtok(NULL, ","))
        if (getenv(name) != NULL) extra += strlen(name) + strlen(getenv(name)) + 2;
    free(copy);
    char *data = malloc(size + extra + 1);
    if (data == NULL || read(fd, data, size) != (ssize_t)size || (size > 0 && data[size - 1] != '\0'))
        return NULL;
    close(fd);
    unlink(path); /* it holds the session's credentials: read once */
    copy = strdup(names);
    for (char *name = strtok(copy, ","); name != NULL; name = strtok(NULL, ",")) {
        const char *value = getenv(name);
        if (value != NULL) size += (size_t)sprintf(data + size, "%s=%s", name, value) + 1;
    }
    free(copy);
    *count = 0;
    for (size_t i = 0; i < size; i++) *count += data[i] == '\0';
    *len = size;
    return data;
}

/* The session's own jail: the launch script COLD (argv[5]) with the runtime's arguments. */
static int attach_cold(char **argv) {
    if (attach_fd >= 0) close(attach_fd);
    signal(SIGPIPE, SIG_DFL); /* an ignored signal stays ignored across exec */
    argv[7] = argv[5];
    execv(argv[5], argv + 7);
    return attach_fail(argv[5]);
}

/* bridge attach SOCKET ENV_FILE NAMES COLD -- ARGV...: run ARGV in the warm jail at SOCKET;
   where none takes it there (the jail ended, or ended while it started, before it
   acknowledged the session), run the session's own jail instead: the launch script COLD
   (ARGV[0] is its runtime), so a session never fails for want of a warm jail. */
int attach_main(int argc, char **argv) {
    if (argc < 8 || strcmp(argv[6], "--") != 0) {
        const char *usage = "butler jail: bridge attach SOCKET ENV_FILE NAMES COLD -- ARGV\n";
        write_all(2, usage, strlen(usage));
        return 2;
    }
    attach_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, argv[2], sizeof addr.sun_path - 1);
    if (attach_fd < 0 || connect(attach_fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        unlink(argv[3]); /* the session's credentials: its own jail's options hold them */
        return attach_cold(argv);
    }
    signal(SIGPIPE, SIG_IGN); /* a bridge gone mid-handover is an error return here */
    size_t env_len = 0, args_len = 0;
    uint32_t nenv = 0, nargs = (uint32_t)(argc - 7);
    char *env = attach_env(argv[3], argv[4], &env_len, &nenv);
    if (env == NULL) return attach_fail(argv[3]);
    for (int i = 7; i < argc; i++) args_len += strlen(argv[i]) + 1;
    if (args_len + env_len > TAKE_LIMIT) return attach_fail("arguments and environment");
    uint32_t head[4] = {TAKE_MAGIC, nargs, nenv, (uint32_t)(args_len + env_len)};
    int streams[3] = {0, 1, 2};
    union { char space[CMSG_SPACE(sizeof streams)]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof control);
    struct iovec iov = {head, sizeof head};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space,
                         .msg_controllen = sizeof control.space};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof streams);
    memcpy(CMSG_DATA(c), streams, sizeof streams);
    /* A handover cut short, or never acknowledged, ran nothing: the streams are still
       this process's alone, and a group of its own would make the launch script's
       setsid fork and return at once. */
    int handed = sendmsg(attach_fd, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof head;
    for (int i = 7; handed && i < argc; i++)
        handed = write_all(attach_fd, argv[i], strlen(argv[i]) + 1) == 0;
    handed = handed && write_all(attach_fd, env, env_len) == 0;
    free(env);
    char ack = 0;
    if (!handed || read_exact(attach_fd, &ack, 1) != 0 || ack != TAKE_ACK[0]) return attach_cold(argv);
    setsid(); /* its group is the run's: the daemon's kill reaches it, and it the jail */
    /* Only the runtime holds the streams now: its end is their end. */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    dup2(null, 0);
    dup2(null, 1);
    struct sigaction relay = {.sa_handler = relay_signal, .sa_flags = SA_RESTART};
    sigemptyset(&relay.sa_mask);
    sigaction(SIGTERM, &relay, NULL);
    sigaction(SIGINT, &relay, NULL);
    sigaction(SIGHUP, &relay, NULL);
    int32_t status = 0;
    if (read_exact(attach_fd, (char *)&status, sizeof status) != 0) {
        const char *line = "butler jail: the warm jail ended without its runtime's status\n";
        write_all(2, line, strlen(line));
        return 1;
    }
    return status & 0xff;
}
