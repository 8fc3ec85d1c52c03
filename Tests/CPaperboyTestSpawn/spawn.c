#define _GNU_SOURCE
#include <spawn.h>
#include "CPaperboyTestSpawn.h"

int paperboy_test_spawn_closefrom(posix_spawn_file_actions_t *actions, int fd) {
    return posix_spawn_file_actions_addclosefrom_np(actions, fd);
}

int paperboy_test_spawn_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}
