/* The relay: the jail's loopback ports, each connection carried to the egress proxy.

   The jail has no network but loopback: the proxy port (the runtime's HTTPS_PROXY) is
   passed to the proxy untouched, and each forwarded port asks the proxy for the same
   port on the host's loopback first (a CONNECT), so the proxy decides every connection.
   Two threads per connection (one each way), at most MAX_CONNECTIONS of them. */

#include "bridge.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536
#define HEAD_LIMIT 16384
/* Connections relayed at once; past it a new one is closed at once. Each holds two threads,
   which no bound of the jail counts (the watcher counts processes, not the init's threads):
   without it a runtime holding 16000 connections took every pid of the machine. */
#define MAX_CONNECTIONS 512

const char *egress_path;
static int live_connections;

struct connection { int client; const char *target; };

struct pipe_ends { int src, dst; };

static void relay(int src, int dst) {
    char *buffer = malloc(CHUNK);
    if (buffer != NULL) {
        for (;;) {
            ssize_t n = recv(src, buffer, CHUNK, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0 || write_all(dst, buffer, (size_t)n) != 0) break;
        }
        free(buffer);
    }
    shutdown(dst, SHUT_WR);
}

static void *relay_back(void *arg) {
    relay(((struct pipe_ends *)arg)->src, ((struct pipe_ends *)arg)->dst);
    return NULL;
}

/* A connection to the proxy; for a forward, already through its CONNECT. -1 when refused. */
static int tunnel(const char *target) {
    int up = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (up < 0) return -1;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, egress_path, sizeof addr.sun_path - 1);
    if (connect(up, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(up);
        return -1;
    }
    if (target[0] == '\0') return up;
    char request[128];
    int len = snprintf(request, sizeof request, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n",
                       target, target);
    if (write_all(up, request, (size_t)len) != 0) {
        close(up);
        return -1;
    }
    /* Byte by byte up to the blank line: nothing of what follows it is read here. */
    char head[HEAD_LIMIT];
    size_t got = 0;
    while (got < sizeof head) {
        ssize_t n = recv(up, head + got, 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got++;
        if (got >= 4 && memcmp(head + got - 4, "\r\n\r\n", 4) == 0) break;
    }
    if (got < 12 || (memcmp(head, "HTTP/1.1 200", 12) != 0 && memcmp(head, "HTTP/1.0 200", 12) != 0)) {
        close(up);
        return -1;
    }
    return up;
}

static void *serve(void *arg) {
    struct connection *conn = arg;
    int up = tunnel(conn->target);
    if (up >= 0) {
        struct pipe_ends back = {up, conn->client};
        pthread_t thread;
        if (pthread_create(&thread, NULL, relay_back, &back) == 0) {
            relay(conn->client, up);
            pthread_join(thread, NULL);
        }
        close(up);
    }
    close(conn->client);
    free(conn);
    __atomic_fetch_sub(&live_connections, 1, __ATOMIC_RELAXED);
    return NULL;
}

void start_detached(void *(*run)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    if (pthread_create(&thread, &attr, run, arg) != 0 && run == serve) {
        struct connection *conn = arg;
        close(conn->client);
        free(conn);
        __atomic_fetch_sub(&live_connections, 1, __ATOMIC_RELAXED);
    }
    pthread_attr_destroy(&attr);
}

void *accept_loop(void *arg) {
    struct listener *listener = arg;
    for (;;) {
        int client = accept4(listener->fd, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            struct timespec pause = {0, 10000000L}; /* out of descriptors: let some close */
            nanosleep(&pause, NULL);
            continue;
        }
        struct connection *conn = NULL;
        if (__atomic_add_fetch(&live_connections, 1, __ATOMIC_RELAXED) <= MAX_CONNECTIONS)
            conn = malloc(sizeof *conn);
        if (conn == NULL) {
            __atomic_fetch_sub(&live_connections, 1, __ATOMIC_RELAXED);
            close(client);
        } else {
            /* Each MCP request is a small write the runtime waits on: without NODELAY,
               Nagle held it behind the previous one's ACK (tools/list took 48-50 ms
               through the jail against 18-24 ms outside). A Unix listener refuses it. */
            int one = 1;
            setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            *conn = (struct connection){client, listener->target};
            start_detached(serve, conn);
        }
    }
    return NULL;
}

int listen_on(const char *host, int port) {
    int v6 = strchr(host, ':') != NULL;
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int bound;
    if (v6) {
        struct sockaddr_in6 addr = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
        inet_pton(AF_INET6, host, &addr.sin6_addr);
        bound = bind(fd, (struct sockaddr *)&addr, sizeof addr);
    } else {
        struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        inet_pton(AF_INET, host, &addr.sin_addr);
        bound = bind(fd, (struct sockaddr *)&addr, sizeof addr);
    }
    if (bound != 0 || listen(fd, 128) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}
