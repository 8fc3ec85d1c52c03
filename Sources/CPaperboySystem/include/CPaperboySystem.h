#ifndef CPAPERBOY_SYSTEM_H
#define CPAPERBOY_SYSTEM_H

/// Flushes every dirty page of the file system holding `fd` (Linux syncfs(2); sync(2) elsewhere).
int paperboy_syncfs(int fd);

/// Fills `count` bytes (at most 256) at `buffer` from the kernel's random source; 0 on
/// success, -1 with errno set otherwise (ENOSYS where getrandom(2) does not exist).
int paperboy_random_bytes(void *buffer, unsigned long count);

/// The type (f_type, a magic number of linux/magic.h) of the file system holding `path`
/// (Linux statfs(2)); -1 on failure, or where statfs(2) does not give one.
long long paperboy_file_system_type(const char *path);

#include <sys/types.h>

/// Makes `length` bytes of `dst` at `dst_offset` share the blocks of `src` at `src_offset`
/// (Linux FICLONERANGE: a reflink; nothing is read or written). The offsets must be multiples
/// of the file system's block size, and so must `length` unless the range ends at the end of
/// `src`. Returns 0, or an errno value (EOPNOTSUPP where the file system or the system has no
/// clones, EXDEV across file systems, EINVAL for a range it refuses).
int paperboy_clone_range(int src, long long src_offset, long long length, int dst, long long dst_offset);

/// Copies up to `length` bytes of `src` at `*src_offset` to `dst` at `*dst_offset` in the
/// kernel (Linux copy_file_range(2)), advancing both offsets. Returns the bytes copied (0 at
/// the end of `src`), or -1 with errno set (ENOSYS where the call does not exist).
long long paperboy_copy_file_range(int src, long long *src_offset, int dst, long long *dst_offset, unsigned long length);

/// Creates a pipe whose two ends are close-on-exec. Returns 0, or an errno value.
int paperboy_pipe_cloexec(int fds[2]);

/// Starts the program at `path` (already resolved: no PATH search) with `argv` and `envp`, in
/// the folder `dir` (NULL: this process's).
///
/// In the child, before exec: standard input, output and error become `in_fd`, `out_fd` and
/// `err_fd`; every other descriptor is closed on exec; signal dispositions and the signal mask
/// are reset (a parent ignoring SIGTERM must not make its children immune); the child leads its
/// own process group (so that `kill(-pid, …)` reaches what it starts too); and on Linux it
/// receives SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG), so a child never
/// outlives a parent killed with SIGKILL. Call it from a thread that lives until the child has
/// ended (or as long as the process). Unlike Foundation's `Process`, it lists no descriptors
/// in the parent (swift-corelibs-foundation#5472 crashed processes there). Unlike fork(), it
/// copies no page tables: the child borrows the parent's memory until exec (clone with
/// CLONE_VM | CLONE_VFORK, as posix_spawn does), so the other threads never wait for it.
///
/// Returns 0 and stores the child's pid, or returns the errno of the failed clone, chdir or exec.
int paperboy_spawn(const char *path, char *const argv[], char *const envp[], const char *dir,
                   int in_fd, int out_fd, int err_fd, pid_t *pid);

/// Blocks SIGPIPE in the calling thread, so a write to a child that exited fails with EPIPE.
void paperboy_block_sigpipe(void);

/// Consumes a SIGPIPE left pending in the calling thread by a failed write.
void paperboy_clear_sigpipe(void);

#include <pthread.h>
#include <stddef.h>

/// Allocation functions for a C library that allocates and frees large buffers per operation
/// (libcurl 7.88 gives every easy handle its own receive buffer, 512 KiB here): a freed block
/// of at least ``PAPERBOY_RECYCLE_MIN`` and at most ``PAPERBOY_RECYCLE_MAX`` bytes is kept
/// (``PAPERBOY_RECYCLE_SLOTS`` at most) and handed to the next request it fits (no more than
/// twice the size asked for), so its pages stay resident. With `malloc` and `free` alone,
/// glibc handed each freed buffer back to the kernel (munmap, or a trim of the arena) and the
/// next one faulted its pages in again: about 11 page faults per small file. Everything else
/// is `malloc`'s, and every block is one `malloc` made, so `realloc` and `free` stay valid.
#define PAPERBOY_RECYCLE_MIN 131072 // 128 KiB
#define PAPERBOY_RECYCLE_MAX 2097152 // 2 MiB
#define PAPERBOY_RECYCLE_SLOTS 8

/// The blocks one recycler keeps; thread-safe. Initialise with ``paperboy_recycler_init``.
typedef struct {
    pthread_mutex_t lock;
    void *blocks[PAPERBOY_RECYCLE_SLOTS];
    size_t sizes[PAPERBOY_RECYCLE_SLOTS];
    int count;
} paperboy_recycler;

void paperboy_recycler_init(paperboy_recycler *recycler);
void *paperboy_recycler_malloc(paperboy_recycler *recycler, size_t size);
void paperboy_recycler_free(paperboy_recycler *recycler, void *pointer);
void *paperboy_recycler_calloc(paperboy_recycler *recycler, size_t count, size_t size);
/// Blocks kept now.
int paperboy_recycler_kept(paperboy_recycler *recycler);
/// Frees every kept block.
void paperboy_recycler_drain(paperboy_recycler *recycler);

/// The process's recycler, in the signatures of curl_global_init_mem.
void *paperboy_recycling_malloc(size_t size);
void paperboy_recycling_free(void *pointer);
void *paperboy_recycling_realloc(void *pointer, size_t size);
char *paperboy_recycling_strdup(const char *string);
void *paperboy_recycling_calloc(size_t count, size_t size);
/// Calls of ``paperboy_recycling_malloc`` and ``paperboy_recycling_calloc`` so far (tests: the
/// allocator is the one libcurl uses).
unsigned long paperboy_recycling_allocations(void);

#endif
