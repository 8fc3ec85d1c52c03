#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/random.h>
#include <sys/statfs.h>
#include <sys/ioctl.h>
#include <linux/fs.h>
#endif
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
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

long long paperboy_file_system_type(const char *path) {
#if defined(__linux__)
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long long)info.f_type;
#else
    (void)path;
    return -1;
#endif
}

int paperboy_clone_range(int src, long long src_offset, long long length, int dst, long long dst_offset) {
#if defined(__linux__) && defined(FICLONERANGE)
    struct file_clone_range range = {
        .src_fd = src, .src_offset = (__u64)src_offset, .src_length = (__u64)length, .dest_offset = (__u64)dst_offset,
    };
    for (;;) {
        if (ioctl(dst, FICLONERANGE, &range) == 0) return 0;
        if (errno != EINTR) return errno;
    }
#else
    (void)src;
    (void)src_offset;
    (void)length;
    (void)dst;
    (void)dst_offset;
    return EOPNOTSUPP;
#endif
}

long long paperboy_copy_file_range(int src, long long *src_offset, int dst, long long *dst_offset, unsigned long length) {
#if defined(__linux__)
    off_t in = (off_t)*src_offset, out = (off_t)*dst_offset;
    ssize_t copied;
    do {
        copied = copy_file_range(src, &in, dst, &out, length, 0);
    } while (copied < 0 && errno == EINTR);
    *src_offset = (long long)in;
    *dst_offset = (long long)out;
    return (long long)copied;
#else
    (void)src;
    (void)src_offset;
    (void)dst;
    (void)dst_offset;
    (void)length;
    errno = ENOSYS;
    return -1;
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

/// What the child of paperboy_spawn needs; `failure` is written by the child, which borrows
/// this memory until it execs.
struct spawn_request {
    const char *path;
    char *const *argv;
    char *const *envp;
    const char *dir;
    int in_fd, out_fd, err_fd;
    pid_t parent;
    volatile int failure;
};

/// The child, on a stack of its own in the parent's memory: only system calls until exec.
static int spawn_child(void *context) {
    struct spawn_request *request = context;
#if defined(__linux__)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != request->parent) _exit(127);
#endif
    setpgid(0, 0);
    // Every signal is still blocked (see paperboy_spawn): no handler of the parent's runs here.
    struct sigaction dfl;
    dfl.sa_handler = SIG_DFL;
    dfl.sa_flags = 0;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &dfl, NULL);
    if (dup2(request->in_fd, 0) < 0 || dup2(request->out_fd, 1) < 0 || dup2(request->err_fd, 2) < 0) goto failed;
    close_others_on_exec();
    if (request->dir != NULL && chdir(request->dir) != 0) goto failed;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(request->path, request->argv, request->envp);
failed:
    request->failure = errno != 0 ? errno : EINVAL;
    _exit(127);
}

int paperboy_spawn(const char *path, char *const argv[], char *const envp[], const char *dir,
                   int in_fd, int out_fd, int err_fd, pid_t *pid) {
    struct spawn_request request = {path, argv, envp, dir, in_fd, out_fd, err_fd, getpid(), 0};
    // Not fork(): it copies the page tables of the whole process while holding its memory-map
    // lock, and every other thread that faults meanwhile waits (hundreds of milliseconds in a
    // large, busy process: the whole cooperative pool stalls). The child borrows this memory and
    // this thread waits until it has called exec or exited (CLONE_VFORK), as posix_spawn does.
    sigset_t all, old;
    sigfillset(&all);
#if defined(__linux__)
    const size_t stack_size = 64 * 1024;
    void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return errno;
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t child = clone(spawn_child, (char *)stack + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, &request);
    int failure = child < 0 ? errno : request.failure;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    munmap(stack, stack_size);
#else
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t child = vfork();
    if (child == 0) spawn_child(&request);
    int failure = child < 0 ? errno : request.failure;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
    if (child < 0) return failure;
    if (failure != 0) {
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

// MARK: Recycling allocator (see the header)

void paperboy_recycler_init(paperboy_recycler *recycler) {
    pthread_mutex_init(&recycler->lock, NULL);
    recycler->count = 0;
}

void *paperboy_recycler_malloc(paperboy_recycler *recycler, size_t size) {
    if (size >= PAPERBOY_RECYCLE_MIN && size <= PAPERBOY_RECYCLE_MAX) {
        void *found = NULL;
        pthread_mutex_lock(&recycler->lock);
        for (int i = 0; i < recycler->count; i++) {
            // No more than twice the size asked for: no large block held for a small one.
            if (recycler->sizes[i] >= size && recycler->sizes[i] / 2 <= size) {
                found = recycler->blocks[i];
                recycler->count--;
                recycler->blocks[i] = recycler->blocks[recycler->count];
                recycler->sizes[i] = recycler->sizes[recycler->count];
                break;
            }
        }
        pthread_mutex_unlock(&recycler->lock);
        if (found != NULL) return found;
    }
    return malloc(size);
}

void paperboy_recycler_free(paperboy_recycler *recycler, void *pointer) {
    if (pointer == NULL) return;
    size_t usable = malloc_usable_size(pointer);
    if (usable >= PAPERBOY_RECYCLE_MIN && usable <= (size_t)PAPERBOY_RECYCLE_MAX + 65536) {
        int kept = 0;
        pthread_mutex_lock(&recycler->lock);
        if (recycler->count < PAPERBOY_RECYCLE_SLOTS) {
            recycler->blocks[recycler->count] = pointer;
            recycler->sizes[recycler->count] = usable;
            recycler->count++;
            kept = 1;
        }
        pthread_mutex_unlock(&recycler->lock);
        if (kept) return;
    }
    free(pointer);
}

void *paperboy_recycler_calloc(paperboy_recycler *recycler, size_t count, size_t size) {
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    size_t total = count * size;
    if (total >= PAPERBOY_RECYCLE_MIN && total <= PAPERBOY_RECYCLE_MAX) {
        void *block = paperboy_recycler_malloc(recycler, total);
        if (block != NULL) memset(block, 0, total);
        return block;
    }
    return calloc(count, size);
}

int paperboy_recycler_kept(paperboy_recycler *recycler) {
    pthread_mutex_lock(&recycler->lock);
    int count = recycler->count;
    pthread_mutex_unlock(&recycler->lock);
    return count;
}

void paperboy_recycler_drain(paperboy_recycler *recycler) {
    pthread_mutex_lock(&recycler->lock);
    for (int i = 0; i < recycler->count; i++) free(recycler->blocks[i]);
    recycler->count = 0;
    pthread_mutex_unlock(&recycler->lock);
}

static paperboy_recycler process_recycler = { PTHREAD_MUTEX_INITIALIZER, { 0 }, { 0 }, 0 };
static unsigned long recycling_allocations = 0;

void *paperboy_recycling_malloc(size_t size) {
    __atomic_add_fetch(&recycling_allocations, 1, __ATOMIC_RELAXED);
    return paperboy_recycler_malloc(&process_recycler, size);
}

void paperboy_recycling_free(void *pointer) {
    paperboy_recycler_free(&process_recycler, pointer);
}

void *paperboy_recycling_realloc(void *pointer, size_t size) {
    // Every block, kept or not, is one malloc made.
    return realloc(pointer, size);
}

char *paperboy_recycling_strdup(const char *string) {
    return strdup(string);
}

void *paperboy_recycling_calloc(size_t count, size_t size) {
    __atomic_add_fetch(&recycling_allocations, 1, __ATOMIC_RELAXED);
    return paperboy_recycler_calloc(&process_recycler, count, size);
}

unsigned long paperboy_recycling_allocations(void) {
    return __atomic_load_n(&recycling_allocations, __ATOMIC_RELAXED);
}
