#ifndef CPAPERBOY_EXEC_H
#define CPAPERBOY_EXEC_H

#include <sys/types.h>

/// Creates a pipe whose two ends are close-on-exec. Returns 0, or an errno value.
int paperboy_exec_pipe(int fds[2]);

/// Starts the program at `path` (already resolved: no PATH search) with `argv` and `envp`.
///
/// In the child, before exec: standard input, output and error become `in_fd`, `out_fd` and
/// `err_fd`; every other descriptor is closed on exec; signal dispositions and the signal mask
/// are reset (a parent ignoring SIGTERM must not make its helpers immune); the child leads its
/// own process group (terminal signals reach the core, which stops its helpers itself); and on
/// Linux it receives SIGKILL when the thread that forked it ends (PR_SET_PDEATHSIG), so a
/// helper never outlives a core killed with SIGKILL. Call it from a thread that lives as long
/// as the process.
///
/// Returns 0 and stores the child's pid, or returns the errno of the failed fork or exec.
int paperboy_exec_spawn(const char *path, char *const argv[], char *const envp[],
                        int in_fd, int out_fd, int err_fd, pid_t *pid);

/// Blocks SIGPIPE in the calling thread, so a write to a helper that exited fails with EPIPE.
void paperboy_exec_block_sigpipe(void);

/// Consumes a SIGPIPE left pending in the calling thread by a failed write.
void paperboy_exec_clear_sigpipe(void);

#endif
