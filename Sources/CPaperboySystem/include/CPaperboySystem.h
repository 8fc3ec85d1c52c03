#ifndef CPAPERBOY_SYSTEM_H
#define CPAPERBOY_SYSTEM_H

/// Flushes every dirty page of the file system holding `fd` (Linux syncfs(2); sync(2) elsewhere).
int paperboy_syncfs(int fd);

#endif
