#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>
#include "child_process.h"

extern char **environ;

static int add_standard(posix_spawn_file_actions_t *actions, int source, int target)
{
    if (source == -1) {
        return 0;
    }
    if (source == -2) {
        return posix_spawn_file_actions_addopen(actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0);
    }
    return posix_spawn_file_actions_adddup2(actions, source, target);
}

int plt_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], const char *directory, int input, int output,
              int error)
{
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int result = posix_spawn_file_actions_init(&actions);
    if (result != 0) {
        return result;
    }
    result = posix_spawnattr_init(&attributes);
    if (result != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return result;
    }
    sigset_t none;
    sigemptyset(&none);
    if (result == 0) result = add_standard(&actions, input, 0);
    if (result == 0) result = add_standard(&actions, output, 1);
    if (result == 0) result = add_standard(&actions, error, 2);
    if (result == 0) result = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (result == 0 && directory != NULL) result = posix_spawn_file_actions_addchdir_np(&actions, directory);
    if (result == 0) result = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    if (result == 0) result = posix_spawnattr_setpgroup(&attributes, 0);
    if (result == 0) result = posix_spawnattr_setsigmask(&attributes, &none);
    if (result == 0) result = posix_spawn(pid, path, &actions, &attributes, argv, envp != NULL ? envp : environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return result;
}
