/* io_hooks.c: the I/O calls whose buffers the kernel touches (read, write, pread, pwrite, readv,
 * writev, send, sendto, sendmsg, recv, recvfrom, recvmsg). A guarded buffer does not fault in the
 * kernel, the call fails with EFAULT; so each wrapper hands the buffer to the guard first (report,
 * then repair or unprotect) and then calls the next definition (dlsym RTLD_NEXT), unchanged.
 * Cost when nothing is guarded: one atomic load. Thread-safe and async-signal-safe (the real
 * functions are resolved at init, or on first use before it; raw syscalls until they are known). */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/common.h"
#include "base/real.h"
#include "guard.h"

/* X(name, return type, parameters, arguments, raw syscall arguments) */
#define IO_FUNCS(X)                                                                                                  \
    X(read, ssize_t, (int fd, void *buf, size_t n), (fd, buf, n), (SYS_read, fd, buf, n))                           \
    X(write, ssize_t, (int fd, const void *buf, size_t n), (fd, buf, n), (SYS_write, fd, buf, n))                   \
    X(pread, ssize_t, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off), (SYS_pread64, fd, buf, n, off))  \
    X(pread64, ssize_t, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off),                              \
      (SYS_pread64, fd, buf, n, off))                                                                                \
    X(pwrite, ssize_t, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off),                           \
      (SYS_pwrite64, fd, buf, n, off))                                                                               \
    X(pwrite64, ssize_t, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off),                       \
      (SYS_pwrite64, fd, buf, n, off))                                                                               \
    X(readv, ssize_t, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), (SYS_readv, fd, iov, cnt))        \
    X(writev, ssize_t, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), (SYS_writev, fd, iov, cnt))      \
    X(send, ssize_t, (int fd, const void *buf, size_t n, int flags), (fd, buf, n, flags),                           \
      (SYS_sendto, fd, buf, n, flags, NULL, 0))                                                                      \
    X(sendto, ssize_t, (int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t tolen),  \
      (fd, buf, n, flags, to, tolen), (SYS_sendto, fd, buf, n, flags, to, tolen))                                    \
    X(sendmsg, ssize_t, (int fd, const struct msghdr *msg, int flags), (fd, msg, flags), (SYS_sendmsg, fd, msg, flags)) \
    X(recv, ssize_t, (int fd, void *buf, size_t n, int flags), (fd, buf, n, flags),                                 \
      (SYS_recvfrom, fd, buf, n, flags, NULL, NULL))                                                                 \
    X(recvfrom, ssize_t, (int fd, void *buf, size_t n, int flags, struct sockaddr *from, socklen_t *fromlen),       \
      (fd, buf, n, flags, from, fromlen), (SYS_recvfrom, fd, buf, n, flags, from, fromlen))                          \
    X(recvmsg, ssize_t, (int fd, struct msghdr *msg, int flags), (fd, msg, flags), (SYS_recvmsg, fd, msg, flags))

#define X(name, ret, params, args, raw) static ret(*real_##name) params;
IO_FUNCS(X)
#undef X

static void *next_symbol(const char *name)
{
    if (real_dlsym_ready() != 0)
        return NULL;
    return pinshim_real_dlsym(RTLD_NEXT, name);
}

/* The next definition of each, or NULL (the wrapper then makes the raw system call). */
static void resolve_all(void)
{
#define X(name, ret, params, args, raw)                                                                \
    if (!__atomic_load_n(&real_##name, __ATOMIC_ACQUIRE))                                              \
        __atomic_store_n(&real_##name, (ret(*) params)next_symbol(#name), __ATOMIC_RELEASE);
    IO_FUNCS(X)
#undef X
}

__attribute__((constructor)) static void io_hooks_init(void) { resolve_all(); }

static bool guarding(void) { return PINSHIM_UNLIKELY(__atomic_load_n(&guard_live, __ATOMIC_RELAXED) > 0); }

static void check_iov(const struct iovec *iov, int cnt, enum guard_access access, const char *via)
{
    for (int i = 0; iov && i < cnt; i++)
        guard_io((uintptr_t)iov[i].iov_base, iov[i].iov_len, access, via);
}

/* Before each call: what the kernel does with the program's buffers. Reading a file into a
 * buffer is a WRITE of it; writing it out is a READ. */
#define CHECK_read guard_io((uintptr_t)buf, n, GUARD_WRITE, "read(2)")
#define CHECK_write guard_io((uintptr_t)buf, n, GUARD_READ, "write(2)")
#define CHECK_pread guard_io((uintptr_t)buf, n, GUARD_WRITE, "pread(2)")
#define CHECK_pread64 guard_io((uintptr_t)buf, n, GUARD_WRITE, "pread(2)")
#define CHECK_pwrite guard_io((uintptr_t)buf, n, GUARD_READ, "pwrite(2)")
#define CHECK_pwrite64 guard_io((uintptr_t)buf, n, GUARD_READ, "pwrite(2)")
#define CHECK_readv check_iov(iov, cnt, GUARD_WRITE, "readv(2)")
#define CHECK_writev check_iov(iov, cnt, GUARD_READ, "writev(2)")
#define CHECK_send guard_io((uintptr_t)buf, n, GUARD_READ, "send(2)")
#define CHECK_sendto guard_io((uintptr_t)buf, n, GUARD_READ, "sendto(2)")
#define CHECK_sendmsg (msg ? check_iov(msg->msg_iov, (int)msg->msg_iovlen, GUARD_READ, "sendmsg(2)") : (void)0)
#define CHECK_recv guard_io((uintptr_t)buf, n, GUARD_WRITE, "recv(2)")
#define CHECK_recvfrom guard_io((uintptr_t)buf, n, GUARD_WRITE, "recvfrom(2)")
#define CHECK_recvmsg (msg ? check_iov(msg->msg_iov, (int)msg->msg_iovlen, GUARD_WRITE, "recvmsg(2)") : (void)0)

#define X(name, ret, params, args, raw)                                                                \
    PINSHIM_EXPORT ret name params                                                                     \
    {                                                                                                  \
        if (guarding())                                                                                \
            CHECK_##name;                                                                              \
        ret(*fn) params = __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE);                             \
        if (PINSHIM_UNLIKELY(!fn)) {                                                                   \
            resolve_all();                                                                             \
            fn = __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE);                                      \
            if (!fn)                                                                                   \
                return (ret)syscall raw;                                                               \
        }                                                                                              \
        return fn args;                                                                                \
    }
IO_FUNCS(X)
#undef X
