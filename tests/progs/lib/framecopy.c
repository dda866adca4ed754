/* framecopy.c: a library that makes copies for its caller, standing in for a framework's native
 * module (tests/bats/symbols.bats copies it to a path under torch/, cupy/ or elsewhere, and the
 * shim's advice names the fix of the framework the path belongs to). The driver functions are
 * passed in, so the library links nothing. */
#include <cuda.h>
#include <stddef.h>

typedef CUresult (*framecopy_htod_fn)(CUdeviceptr, const void *, size_t);
typedef CUresult (*framecopy_dtoh_fn)(void *, CUdeviceptr, size_t);

__attribute__((noinline)) CUresult framecopy_h2d(framecopy_htod_fn fn, CUdeviceptr dst, const void *src, size_t n);
__attribute__((noinline)) CUresult framecopy_h2d(framecopy_htod_fn fn, CUdeviceptr dst, const void *src, size_t n)
{
    CUresult r = fn(dst, src, n);
    __asm__ volatile("" ::: "memory"); /* the call stays a call: its return address is in here */
    return r;
}

__attribute__((noinline)) CUresult framecopy_d2h(framecopy_dtoh_fn fn, void *dst, CUdeviceptr src, size_t n);
__attribute__((noinline)) CUresult framecopy_d2h(framecopy_dtoh_fn fn, void *dst, CUdeviceptr src, size_t n)
{
    CUresult r = fn(dst, src, n);
    __asm__ volatile("" ::: "memory");
    return r;
}
