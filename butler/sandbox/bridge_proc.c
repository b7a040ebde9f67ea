/* Reading the jail's /proc: its processes, the memory they hold, and its tmpfs files.

   What the bounds watcher (bridge_bounds.c) measures, kept apart from what it decides:
   the jail's own pid namespace shows only the jail's processes, and its mount namespace
   only the jail's mounts, so each reading is the jail's alone. */

#include "bridge.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Whether a /proc entry is a process of the jail other than this bridge (its init). */
int is_other(const char *name, const char *own) {
    int pid = *name != '\0' && strspn(name, "0123456789") == strlen(name);
    return pid && strcmp(name, "1") != 0 && strcmp(name, own) != 0;
}

/* /proc/PID/NAME's start into DATA (SIZE bytes, NUL-terminated); 0 when the process
   ended meanwhile or the file says nothing. */
static int read_proc(const char *pid, const char *name, char *data, size_t size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%s/%s", pid, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, data, size - 1);
    close(fd);
    if (n <= 0) return 0;
    data[n] = '\0';
    return 1;
}

long long pss_bytes(const char *pid) {
    char data[4097];
    if (!read_proc(pid, "smaps_rollup", data, sizeof data)) return 0;
    for (char *line = data; line != NULL; line = strchr(line, '\n')) {
        if (*line == '\n') line++;
        if (strncmp(line, "Pss:", 4) == 0) return strtoll(line + 4, NULL, 10) << 10;
    }
    return 0;
}

/* A process's resident size from statm: no page walk, and never below its PSS (a page
   shared by n processes counts 1/n there, 1 here). */
long long rss_bytes(const char *pid) {
    char data[256];
    long long size = 0, resident = 0;
    if (!read_proc(pid, "statm", data, sizeof data)) return 0;
    if (sscanf(data, "%lld %lld", &size, &resident) != 2) return 0;
    return resident * (long long)sysconf(_SC_PAGESIZE);
}

long long memory_of(DIR *proc, const char *own, long long (*of)(const char *)) {
    long long total = 0;
    struct dirent *entry;
    rewinddir(proc);
    while ((entry = readdir(proc)) != NULL)
        if (is_other(entry->d_name, own)) total += of(entry->d_name);
    return total;
}

/* What the files of the jail's own tmpfs mounts (/, /tmp, /dev, /run...) hold: they are
   memory no process's PSS counts, so a runtime writing to /tmp went past max_memory_mb
   unseen. Bubblewrap's mounts are whole filesystems (root "/" in mountinfo) but for the
   jail's "/" (its own tmpfs's /newroot); a folder the jail binds from a host tmpfs has a
   deeper root and is not the jail's to count. */
long long tmpfs_bytes(void) {
    FILE *mounts = fopen("/proc/self/mountinfo", "re");
    if (mounts == NULL) return 0;
    char line[4096], dev[64], root[1024], point[1024], seen[64][64];
    int kinds = 0;
    long long total = 0;
    while (fgets(line, sizeof line, mounts) != NULL) {
        if (strstr(line, " - tmpfs ") == NULL) continue;
        if (sscanf(line, "%*s %*s %63s %1023s %1023s", dev, root, point) != 3) continue;
        if (strcmp(root, "/") != 0 && strcmp(point, "/") != 0) continue;
        int known = 0;
        for (int i = 0; i < kinds; i++) known |= strcmp(seen[i], dev) == 0;
        if (known || kinds == 64) continue;
        strcpy(seen[kinds++], dev);
        struct statvfs fs;
        if (statvfs(point, &fs) == 0) total += (long long)(fs.f_blocks - fs.f_bfree) * (long long)fs.f_frsize;
    }
    fclose(mounts);
    return total;
}
