/* hostmem_entry.c: handlers of the calls that make host memory pinned or pageable again
 * (cuMemHostAlloc, cuMemAllocHost, cuMemFreeHost, cuMemHostRegister, cuMemHostUnregister).
 * After the driver succeeds, the range goes into (or out of) memkind's table, so copies from it are
 * classified without asking the driver. The program sees the real result. */
#include "driver_shapes.h"
#include "entry.h"
#include "guard/guard.h"
#include "hostmem/memkind.h"
#include "hostmem/regcache.h"

CUresult shape_host_alloc(enum driver_entry_id id, SHAPE_host_alloc_P)
{
    ENTRY_PROLOGUE(host_alloc, pp, bytes, flags);
    CUresult result = real(pp, bytes, flags);
    if (result == CUDA_SUCCESS && pp)
        memkind_add_range((uintptr_t)*pp, bytes, KIND_PINNED);
    return result;
}

CUresult shape_alloc_host(enum driver_entry_id id, SHAPE_alloc_host_P)
{
    ENTRY_PROLOGUE(alloc_host, pp, bytes);
    CUresult result = real(pp, bytes);
    if (result == CUDA_SUCCESS && pp)
        memkind_add_range((uintptr_t)*pp, bytes, KIND_PINNED);
    return result;
}

CUresult shape_free_host(enum driver_entry_id id, SHAPE_free_host_P)
{
    ENTRY_PROLOGUE(free_host, p);
    guard_on_host_release((uintptr_t)p); /* unprotect before the pages go away */
    CUresult result = real(p);
    if (result == CUDA_SUCCESS)
        memkind_remove_range((uintptr_t)p);
    return result;
}

CUresult shape_host_register(enum driver_entry_id id, SHAPE_host_register_P)
{
    ENTRY_PROLOGUE(host_register, p, bytes, flags);
    regcache_on_program_register((uintptr_t)p, bytes); /* the program's own registration wins */
    CUresult result = real(p, bytes, flags);
    if (result == CUDA_SUCCESS)
        memkind_add_range((uintptr_t)p, bytes, KIND_REGISTERED);
    return result;
}

CUresult shape_host_unregister(enum driver_entry_id id, SHAPE_host_unregister_P)
{
    ENTRY_PROLOGUE(host_unregister, p);
    guard_on_host_release((uintptr_t)p); /* unprotect before the pages go away */
    CUresult result = real(p);
    if (result == CUDA_SUCCESS)
        memkind_remove_range((uintptr_t)p);
    return result;
}
