/* Whole writes and reads on a descriptor: every part of the bridge speaks through these.

   A short write or read is retried and an interruption by a signal (the bridge relays
   some) is not an error; a peer gone is one, returned rather than raised as SIGPIPE. */

#include "bridge.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

/* SIGPIPE is ignored in the bridge: a peer gone mid-write is an error return here. */
int write_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int read_exact(int fd, char *into, size_t len) {
    while (len > 0) {
        ssize_t n = recv(fd, into, len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        into += n;
        len -= (size_t)n;
    }
    return 0;
}
