#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/random.h>
#endif
#include "CPaperboySystem.h"

int paperboy_syncfs(int fd) {
#if defined(__linux__)
    return syncfs(fd);
#else
    (void)fd;
    sync();
    return 0;
#endif
}

int paperboy_random_bytes(void *buffer, unsigned long count) {
#if defined(__linux__)
    for (;;) {
        ssize_t got = getrandom(buffer, count, 0);
        if (got == (ssize_t)count) return 0;
        if (got < 0 && errno == EINTR) continue;
        if (got >= 0) errno = EIO;
        return -1;
    }
#else
    (void)buffer;
    (void)count;
    errno = ENOSYS;
    return -1;
#endif
}
