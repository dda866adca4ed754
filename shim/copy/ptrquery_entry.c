/* ptrquery_entry.c: handlers of the calls that ask the driver what a host pointer is
 * (cuPointerGetAttribute, cuPointerGetAttributes, cuPointerSetAttribute, cuMemHostGetFlags,
 * cuMemHostGetDevicePointer).
 * Contract: memory the pin-on-reuse cache registered is pageable memory to the program, so it must
 * read as pageable here too (PyTorch's is_pinned() asks cuPointerGetAttributes, and a tensor the
 * program never pinned must not turn pinned under the shim). For a pointer inside such a
 * registration the driver is asked the same question about an address of the shim's own pageable
 * memory, and its answer (return code and values) goes back with that address replaced by the
 * program's pointer: the driver reports a pageable pointer's host pointer as the pointer itself
 * (tests/conformance expected.txt, attrs.kinds.pageable). So the answer is the driver's own for
 * pageable memory, whatever the attribute, including ones this file does not know. Every other
 * pointer gets the driver's answer untouched. These calls are not counted as activity. */
#include "driver_shapes.h"
#include "entry.h"
#include "hostmem/regcache.h"

/* Pageable memory nobody registers: the stand-in the driver is asked about. */
static unsigned char pageable_stand_in[64];
#define STAND_IN ((uintptr_t)pageable_stand_in)

#define QUERY_PROLOGUE(shape, ...)                                                                     \
    fn_##shape real = (fn_##shape)driver_real(id);                                                     \
    if (PINSHIM_UNLIKELY(!real))                                                                       \
        return entry_missing(id);                                                                      \
    if (!entry_observing())                                                                            \
        return real(__VA_ARGS__)

/* The attributes whose value is an address (which, for pageable memory, may be the address asked
 * about): after asking about the stand-in, that address becomes the program's pointer again. */
static void restore_address(CUpointer_attribute attribute, void *data, uintptr_t ptr)
{
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (*(void **)data == (void *)STAND_IN)
            *(void **)data = (void *)ptr;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        if (*(CUdeviceptr *)data == (CUdeviceptr)STAND_IN)
            *(CUdeviceptr *)data = (CUdeviceptr)ptr;
        break;
    default:
        break;
    }
}

CUresult shape_ptr_attr(enum driver_entry_id id, SHAPE_ptr_attr_P)
{
    QUERY_PROLOGUE(ptr_attr, data, attribute, ptr);
    if (!regcache_covers((uintptr_t)ptr))
        return real(data, attribute, ptr);
    CUresult result = real(data, attribute, (CUdeviceptr)STAND_IN);
    if (result == CUDA_SUCCESS && data)
        restore_address(attribute, data, (uintptr_t)ptr);
    return result;
}

CUresult shape_ptr_attrs(enum driver_entry_id id, SHAPE_ptr_attrs_P)
{
    QUERY_PROLOGUE(ptr_attrs, count, attributes, data, ptr);
    if (!regcache_covers((uintptr_t)ptr))
        return real(count, attributes, data, ptr);
    CUresult result = real(count, attributes, data, (CUdeviceptr)STAND_IN);
    if (result == CUDA_SUCCESS && attributes && data)
        for (unsigned int i = 0; i < count; i++)
            if (data[i])
                restore_address(attributes[i], data[i], (uintptr_t)ptr);
    return result;
}

CUresult shape_ptr_set_attr(enum driver_entry_id id, SHAPE_ptr_set_attr_P)
{
    QUERY_PROLOGUE(ptr_set_attr, value, attribute, ptr);
    return real(value, attribute, regcache_covers((uintptr_t)ptr) ? (CUdeviceptr)STAND_IN : ptr);
}

CUresult shape_host_get_flags(enum driver_entry_id id, SHAPE_host_get_flags_P)
{
    QUERY_PROLOGUE(host_get_flags, flags, p);
    return real(flags, regcache_covers((uintptr_t)p) ? (void *)STAND_IN : p);
}

CUresult shape_host_get_devptr(enum driver_entry_id id, SHAPE_host_get_devptr_P)
{
    QUERY_PROLOGUE(host_get_devptr, dptr, p, flags);
    if (!regcache_covers((uintptr_t)p))
        return real(dptr, p, flags);
    CUresult result = real(dptr, (void *)STAND_IN, flags);
    if (result == CUDA_SUCCESS && dptr && *dptr == (CUdeviceptr)STAND_IN)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return result;
}
