#ifndef CPAPERBOY_TEST_SPAWN_H
#define CPAPERBOY_TEST_SPAWN_H

#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np: the child closes every descriptor from `fd` on,
/// as Foundation's Process does (glibc 2.34+; the _np functions are not visible from Swift).
int paperboy_test_spawn_closefrom(posix_spawn_file_actions_t *actions, int fd);

/// posix_spawn_file_actions_addchdir_np: the child starts in `path`.
int paperboy_test_spawn_chdir(posix_spawn_file_actions_t *actions, const char *path);

#endif
