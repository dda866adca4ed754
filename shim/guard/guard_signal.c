/* guard_signal.c: the guard's SIGSEGV handler and the sigaction/signal interposition that keeps
 * it first (see guard_signal.h). Once installed (at the first guarded copy), the kernel holds the
 * shim's handler for SIGSEGV and SIGBUS; the program's sigaction/signal calls for them only change
 * the recorded "program action", and read back what the program set, as if the shim were not there.
 * A fault that is not the guard's is delivered to the recorded action the way the kernel would
 * have: the handler's sa_mask (plus the signal unless SA_NODEFER) blocked around the call,
 * SA_RESETHAND honoured, SA_SIGINFO or not; SIG_DFL (or SIG_IGN, which the kernel does not honour
 * for a fault) restores SIG_DFL and returns, so the fault repeats and the process dies of it with
 * a core, as it would have. An access fault reaches the guard only through the function given to
 * guard_signal_install(). */
#define _GNU_SOURCE
#include "guard_signal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/common.h"
#include "base/real.h"
#include "guard_stack.h"

typedef int (*fn_sigaction)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*fn_signal)(int, sighandler_t);

static fn_sigaction real_sigaction_fn;
static fn_signal real_signal_fn;

static guard_fault_fn fault_handler; /* the guard's one entry, set before the handler is installed */
static const int guard_signals[2] = {SIGSEGV, SIGBUS};
static struct sigaction program_action[2]; /* what the program set, under action_lock */
static int installed;
static int action_lock; /* a spin flag taken with every signal blocked */

static int signal_index(int sig)
{
    for (int k = 0; k < 2; k++)
        if (guard_signals[k] == sig)
            return k;
    return -1;
}

static void resolve(void)
{
    if (__atomic_load_n(&real_sigaction_fn, __ATOMIC_ACQUIRE) || real_dlsym_ready() != 0)
        return;
    __atomic_store_n(&real_signal_fn, (fn_signal)pinshim_real_dlsym(RTLD_NEXT, "signal"), __ATOMIC_RELEASE);
    __atomic_store_n(&real_sigaction_fn, (fn_sigaction)pinshim_real_dlsym(RTLD_NEXT, "sigaction"), __ATOMIC_RELEASE);
}

void guard_signal_init(void) { resolve(); }

/* Blocks every signal and takes the action lock (writers); the reverse. */
static void lock_actions(sigset_t *saved)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, saved);
    while (__atomic_exchange_n(&action_lock, 1, __ATOMIC_ACQUIRE))
        ;
}

static void unlock_actions(const sigset_t *saved)
{
    __atomic_store_n(&action_lock, 0, __ATOMIC_RELEASE);
    pthread_sigmask(SIG_SETMASK, saved, NULL);
}

PINSHIM_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    resolve();
    if (!real_sigaction_fn) {
        errno = ENOSYS;
        return -1;
    }
    int k = signal_index(sig);
    if (k < 0)
        return real_sigaction_fn(sig, act, old);
    sigset_t saved;
    lock_actions(&saved); /* also orders this call against the installation */
    if (!__atomic_load_n(&installed, __ATOMIC_ACQUIRE)) {
        int r = real_sigaction_fn(sig, act, old), e = errno;
        unlock_actions(&saved);
        errno = e;
        return r;
    }
    struct sigaction previous = program_action[k];
    if (act)
        program_action[k] = *act;
    unlock_actions(&saved);
    if (old)
        *old = previous;
    return 0;
}

PINSHIM_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    resolve();
    if (signal_index(sig) < 0 || !__atomic_load_n(&installed, __ATOMIC_ACQUIRE)) {
        if (!real_signal_fn) {
            errno = ENOSYS;
            return SIG_ERR;
        }
        return real_signal_fn(sig, handler);
    }
    /* glibc's signal(): BSD semantics, the signal blocked in its handler, calls restarted. */
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, sig);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}

/* Hands a signal that is not the guard's to the program's recorded action. */
static void deliver_to_program(int sig, siginfo_t *si, void *uc)
{
    int k = signal_index(sig);
    sigset_t saved;
    lock_actions(&saved);
    struct sigaction pa = program_action[k];
    if ((pa.sa_flags & SA_RESETHAND) && pa.sa_handler != SIG_DFL && pa.sa_handler != SIG_IGN) {
        memset(&program_action[k], 0, sizeof program_action[k]);
        program_action[k].sa_handler = SIG_DFL;
    }
    unlock_actions(&saved);
    bool kernel_fault = si && si->si_code > 0;
    if (pa.sa_handler == SIG_DFL || (pa.sa_handler == SIG_IGN && kernel_fault)) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        real_sigaction_fn(sig, &dfl, NULL);
        if (!kernel_fault) /* sent, not a fault: send it again, now to the default action */
            raise(sig);
        return; /* a fault repeats on return and now kills the process, with a core */
    }
    if (pa.sa_handler == SIG_IGN)
        return;
    sigset_t mask = pa.sa_mask, before;
    if (!(pa.sa_flags & SA_NODEFER))
        sigaddset(&mask, sig);
    pthread_sigmask(SIG_BLOCK, &mask, &before);
    if (pa.sa_flags & SA_SIGINFO)
        pa.sa_sigaction(sig, si, uc);
    else
        pa.sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
}

static void on_fault(int sig, siginfo_t *si, void *ucv)
{
    int saved_errno = errno;
    if (sig == SIGSEGV && si && si->si_code == SEGV_ACCERR) {
        enum guard_access access = GUARD_READ;
#if defined(__x86_64__)
        const ucontext_t *uc = ucv;
        if (uc->uc_mcontext.gregs[REG_ERR] & 2) /* page-fault error code: bit 1 = write access */
            access = GUARD_WRITE;
#endif
        guard_fault_fn guard = __atomic_load_n(&fault_handler, __ATOMIC_ACQUIRE);
        if (guard && guard((uintptr_t)si->si_addr, access, ucv)) {
            errno = saved_errno;
            return;
        }
    }
    deliver_to_program(sig, si, ucv);
    errno = saved_errno;
}

/* --- installation --- */

bool guard_signal_install(guard_fault_fn guard)
{
    if (__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
        return true;
    resolve();
    if (!real_sigaction_fn)
        return false;
    __atomic_store_n(&fault_handler, guard, __ATOMIC_RELEASE);
    guard_stack_prepare(); /* loads the unwinder now, outside any handler */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sigemptyset(&sa.sa_mask);
    /* NODEFER: the program's handler, called from ours, gets exactly the mask it asked for. */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
    sigset_t saved;
    lock_actions(&saved);
    bool ok = true;
    for (int k = 0; k < 2 && ok; k++)
        ok = real_sigaction_fn(guard_signals[k], NULL, &program_action[k]) == 0 &&
             real_sigaction_fn(guard_signals[k], &sa, NULL) == 0;
    if (ok)
        __atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
    unlock_actions(&saved);
    return ok;
}
