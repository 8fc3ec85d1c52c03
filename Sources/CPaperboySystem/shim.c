#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/random.h>
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#if defined(__linux__)
#include <sys/prctl.h>
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


#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

int paperboy_pipe_cloexec(int fds[2]) {
#if defined(__linux__)
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : errno;
#else
    if (pipe(fds) != 0) return errno;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
#endif
}

/// Marks every descriptor from 3 up close-on-exec (only async-signal-safe calls).
static void close_others_on_exec(void) {
#if defined(SYS_close_range)
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536) max = 65536;
    for (int fd = 3; fd < max; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int paperboy_spawn(const char *path, char *const argv[], char *const envp[], const char *dir,
                   int in_fd, int out_fd, int err_fd, pid_t *pid) {
    int report[2];
    int failure = paperboy_pipe_cloexec(report);
    if (failure != 0) return failure;
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        failure = errno;
        close(report[0]);
        close(report[1]);
        return failure;
    }
    if (child == 0) {
        // Between fork and exec only async-signal-safe calls: the other threads' locks are gone.
#if defined(__linux__)
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
#endif
        setpgid(0, 0);
        struct sigaction dfl;
        dfl.sa_handler = SIG_DFL;
        dfl.sa_flags = 0;
        sigemptyset(&dfl.sa_mask);
        for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &dfl, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) goto failed;
        close_others_on_exec();
        if (dir != NULL && chdir(dir) != 0) goto failed;
        execve(path, argv, envp);
    failed:
        failure = errno;
        while (write(report[1], &failure, sizeof failure) < 0 && errno == EINTR) {}
        _exit(127);
    }
    close(report[1]);
    ssize_t got;
    do {
        got = read(report[0], &failure, sizeof failure);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof failure) {
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
        return failure;
    }
    *pid = child;
    return 0;
}

void paperboy_block_sigpipe(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

void paperboy_clear_sigpipe(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&set, NULL, &zero) > 0) {}
}
