/* real.c: resolution of the real dlsym and of libcuda's symbols (see real.h). */
#define _GNU_SOURCE
#include "real.h"

#include <dlfcn.h>
#include <stddef.h>

#include "common.h"

void *(*pinshim_real_dlsym)(void *, const char *);

int real_dlsym_ready(void)
{
    if (__atomic_load_n(&pinshim_real_dlsym, __ATOMIC_ACQUIRE))
        return 0;
    void *f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!f)
        f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!f)
        return -1;
    __atomic_store_n(&pinshim_real_dlsym, (void *(*)(void *, const char *))f, __ATOMIC_RELEASE);
    return 0;
}

void *real_libcuda(void)
{
    static void *handle;
    void *h = __atomic_load_n(&handle, __ATOMIC_ACQUIRE);
    if (h)
        return h;
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h)
        __atomic_store_n(&handle, h, __ATOMIC_RELEASE);
    return h;
}

void *real_driver_symbol(const char *name)
{
    if (real_dlsym_ready() != 0)
        return NULL;
    void *f = pinshim_real_dlsym(RTLD_NEXT, name);
    if (!f) {
        void *h = real_libcuda();
        if (h)
            f = pinshim_real_dlsym(h, name);
    }
    return f;
}

/* What a slot holds once the loaded libcuda was found to lack the symbol (never a function's address). */
static char absent_mark;
#define ABSENT ((void *)&absent_mark)

void *real_driver_symbol_cached(void **slot, const char *name)
{
    void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (PINSHIM_LIKELY(fn))
        return fn == ABSENT ? NULL : fn;
    fn = real_driver_symbol(name);
    if (!fn && real_libcuda())
        __atomic_store_n(slot, ABSENT, __ATOMIC_RELEASE); /* a loaded library gains no symbols */
    else
        __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    return fn;
}

bool real_stream_capturing(CUstream stream)
{
    static void *slot;
    CUresult (*is_capturing)(CUstream, CUstreamCaptureStatus *) =
        (CUresult(*)(CUstream, CUstreamCaptureStatus *))real_driver_symbol_cached(&slot, "cuStreamIsCapturing");
    if (!is_capturing)
        return false;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    pinshim_enter();
    CUresult r = is_capturing(stream, &status);
    pinshim_leave();
    return r != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool real_device_range_whole(CUdeviceptr dev, size_t bytes)
{
    static void *slot;
    CUresult (*attributes)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr) =
        (CUresult(*)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr))real_driver_symbol_cached(
            &slot, "cuPointerGetAttributes");
    if (!attributes)
        return false;
    unsigned int memory_type = 0, managed = 0;
    CUdeviceptr base = 0;
    size_t size = 0;
    CUpointer_attribute which[4] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *values[4] = {&memory_type, &managed, &base, &size};
    pinshim_enter();
    CUresult r = attributes(4, which, values, dev);
    pinshim_leave();
    return r == CUDA_SUCCESS && memory_type == CU_MEMORYTYPE_DEVICE && !managed && dev >= base &&
           bytes <= size - (dev - base);
}

void real_relaxed_begin(CUstreamCaptureMode *saved)
{
    static void *slot;
    CUresult (*exchange)(CUstreamCaptureMode *) =
        (CUresult(*)(CUstreamCaptureMode *))real_driver_symbol_cached(&slot, "cuThreadExchangeStreamCaptureMode");
    *saved = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (exchange)
        exchange(saved);
}

void real_relaxed_end(CUstreamCaptureMode saved)
{
    static void *slot;
    CUresult (*exchange)(CUstreamCaptureMode *) =
        (CUresult(*)(CUstreamCaptureMode *))real_driver_symbol_cached(&slot, "cuThreadExchangeStreamCaptureMode");
    if (exchange)
        exchange(&saved); /* back to the mode real_relaxed_begin found */
}
