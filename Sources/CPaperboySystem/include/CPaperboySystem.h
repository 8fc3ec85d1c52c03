#ifndef CPAPERBOY_SYSTEM_H
#define CPAPERBOY_SYSTEM_H

/// Flushes every dirty page of the file system holding `fd` (Linux syncfs(2); sync(2) elsewhere).
int paperboy_syncfs(int fd);

/// Fills `count` bytes (at most 256) at `buffer` from the kernel's random source; 0 on
/// success, -1 with errno set otherwise (ENOSYS where getrandom(2) does not exist).
int paperboy_random_bytes(void *buffer, unsigned long count);

#endif
