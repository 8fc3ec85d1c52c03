// Wrappers for libssh2's function-like macros, which Swift cannot see, constants defined as
// shift expressions, and the C callbacks a session needs (socket reads and sends, keyboard-interactive).
// The socket-read callback counts bytes and can cap them per call (libssh2 otherwise decrypts
// everything the socket holds into queued packets before returning any).
#ifndef CPAPERBOY_SSH2_SHIM_H
#define CPAPERBOY_SSH2_SHIM_H

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <libssh2.h>
#include <libssh2_sftp.h>

/// Answers keyboard-interactive prompts: fills `responses` (malloc'd text, freed by libssh2).
typedef void (*paperboy_kbdint_function)(void *owner, int prompt_count,
                                         const LIBSSH2_USERAUTH_KBDINT_PROMPT *prompts,
                                         LIBSSH2_USERAUTH_KBDINT_RESPONSE *responses);

/// What a session's callbacks share: the session's abstract pointer points here.
typedef struct paperboy_ssh_context {
    /// Bytes read from the socket so far (to tell whether a round of calls consumed input).
    unsigned long long received;
    /// Bytes the receive callback may still take from the socket before it answers "would
    /// block"; negative: no limit. See `SSHSession.withReceiveLimit`.
    long long budget;
    /// While non-zero, packets are sent with MSG_MORE: the kernel holds them until
    /// `paperboy_ssh_flush`, a send without MSG_MORE, a full segment or an incoming ACK, so a
    /// round of SFTP read requests leaves in a few segments rather than one each. See
    /// `SSHSession.run`.
    int coalesce;
    /// Packets sent with MSG_MORE since the last flush.
    int held;
    /// The Swift object owning the session, handed back to `kbdint`.
    void *owner;
    paperboy_kbdint_function kbdint;
} paperboy_ssh_context;

static ssize_t paperboy_ssh_recv(libssh2_socket_t socket, void *buffer, size_t length, int flags, void **abstract) {
    paperboy_ssh_context *context = (paperboy_ssh_context *)*abstract;
    if (context->budget == 0) return -EAGAIN;
    if (context->budget > 0 && (long long)length > context->budget) length = (size_t)context->budget;
    ssize_t count = recv(socket, buffer, length, flags);
    if (count < 0) return -errno;
    context->received += (unsigned long long)count;
    if (context->budget > 0) context->budget -= count;
    return count;
}

static ssize_t paperboy_ssh_send(libssh2_socket_t socket, const void *buffer, size_t length, int flags, void **abstract) {
    paperboy_ssh_context *context = (paperboy_ssh_context *)*abstract;
    if (context->coalesce) flags |= MSG_MORE;
    ssize_t count = send(socket, buffer, length, flags);
    if (count < 0) return -errno;
    if (context->coalesce) context->held += 1;
    return count;
}

/// Sends what MSG_MORE held back (setting TCP_NODELAY pushes pending segments out).
static inline void paperboy_ssh_flush(libssh2_socket_t socket, paperboy_ssh_context *context) {
    if (context->held == 0) return;
    context->held = 0;
    int on = 1;
    setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

static void paperboy_ssh_kbdint(const char *name, int name_len, const char *instruction, int instruction_len,
                                int prompt_count, const LIBSSH2_USERAUTH_KBDINT_PROMPT *prompts,
                                LIBSSH2_USERAUTH_KBDINT_RESPONSE *responses, void **abstract) {
    (void)name; (void)name_len; (void)instruction; (void)instruction_len;
    paperboy_ssh_context *context = (paperboy_ssh_context *)*abstract;
    if (context->kbdint) context->kbdint(context->owner, prompt_count, prompts, responses);
}

/// A session whose abstract pointer is `context`, with the counting receive callback and the
/// coalescing send callback installed.
static inline LIBSSH2_SESSION *paperboy_session_init(paperboy_ssh_context *context) {
    LIBSSH2_SESSION *session = libssh2_session_init_ex(NULL, NULL, NULL, context);
    if (session) {
        libssh2_session_callback_set(session, LIBSSH2_CALLBACK_RECV, (void *)paperboy_ssh_recv);
        libssh2_session_callback_set(session, LIBSSH2_CALLBACK_SEND, (void *)paperboy_ssh_send);
    }
    return session;
}

static inline int paperboy_session_disconnect(LIBSSH2_SESSION *session, const char *reason) {
    return libssh2_session_disconnect_ex(session, SSH_DISCONNECT_BY_APPLICATION, reason, "");
}

static inline int paperboy_userauth_password(LIBSSH2_SESSION *session, const char *user, const char *password) {
    return libssh2_userauth_password_ex(session, user, (unsigned int)strlen(user),
                                        password, (unsigned int)strlen(password), NULL);
}

static inline int paperboy_userauth_publickey_fromfile(LIBSSH2_SESSION *session, const char *user,
                                                       const char *private_key, const char *passphrase) {
    return libssh2_userauth_publickey_fromfile_ex(session, user, (unsigned int)strlen(user),
                                                  NULL, private_key, passphrase);
}

static inline int paperboy_userauth_keyboard_interactive(LIBSSH2_SESSION *session, const char *user) {
    return libssh2_userauth_keyboard_interactive_ex(session, user, (unsigned int)strlen(user), paperboy_ssh_kbdint);
}

static inline LIBSSH2_SFTP_HANDLE *paperboy_sftp_open_read(LIBSSH2_SFTP *sftp, const char *path) {
    return libssh2_sftp_open_ex(sftp, path, (unsigned int)strlen(path), LIBSSH2_FXF_READ, 0, LIBSSH2_SFTP_OPENFILE);
}

static inline int paperboy_sftp_fstat(LIBSSH2_SFTP_HANDLE *handle, LIBSSH2_SFTP_ATTRIBUTES *attributes) {
    return libssh2_sftp_fstat_ex(handle, attributes, 0);
}

static inline int paperboy_sftp_stat(LIBSSH2_SFTP *sftp, const char *path, LIBSSH2_SFTP_ATTRIBUTES *attributes) {
    return libssh2_sftp_stat_ex(sftp, path, (unsigned int)strlen(path), LIBSSH2_SFTP_STAT, attributes);
}

/// A copy of `text` that libssh2 may free (keyboard-interactive responses).
static inline char *paperboy_strdup(const char *text) { return strdup(text); }

static const int PAPERBOY_KNOWNHOST_TYPE_PLAIN = LIBSSH2_KNOWNHOST_TYPE_PLAIN;
static const int PAPERBOY_KNOWNHOST_KEYENC_RAW = LIBSSH2_KNOWNHOST_KEYENC_RAW;
static const int PAPERBOY_KNOWNHOST_KEY_SSHRSA = LIBSSH2_KNOWNHOST_KEY_SSHRSA;
static const int PAPERBOY_KNOWNHOST_KEY_SSHDSS = LIBSSH2_KNOWNHOST_KEY_SSHDSS;
static const int PAPERBOY_KNOWNHOST_KEY_ECDSA_256 = LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
static const int PAPERBOY_KNOWNHOST_KEY_ECDSA_384 = LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
static const int PAPERBOY_KNOWNHOST_KEY_ECDSA_521 = LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
static const int PAPERBOY_KNOWNHOST_KEY_ED25519 = LIBSSH2_KNOWNHOST_KEY_ED25519;
static const unsigned long PAPERBOY_SFTP_ATTR_SIZE = LIBSSH2_SFTP_ATTR_SIZE;
static const unsigned long PAPERBOY_SFTP_ATTR_ACMODTIME = LIBSSH2_SFTP_ATTR_ACMODTIME;
static const unsigned long PAPERBOY_SFTP_ATTR_PERMISSIONS = LIBSSH2_SFTP_ATTR_PERMISSIONS;
static const unsigned long PAPERBOY_SFTP_S_IFMT = LIBSSH2_SFTP_S_IFMT;
static const unsigned long PAPERBOY_SFTP_S_IFDIR = LIBSSH2_SFTP_S_IFDIR;

/// A non-blocking, close-on-exec eventfd: how other threads wake a session thread.
static inline int paperboy_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

/// poll(2)'s "peer closed its end" event (a GNU extension, hidden without _GNU_SOURCE).
static const short PAPERBOY_POLLRDHUP = 0x2000;

/// libssh2's version, such as "1.10.0".
static inline const char *paperboy_ssh2_version(void) { return libssh2_version(0); }

#endif
