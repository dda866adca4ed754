/* ctx_entry.c: the handler of cuDevicePrimaryCtxReset (cudaDeviceReset reaches it). A reset frees
 * every allocation of the primary context: the pool forgets its slabs there, and the range table
 * forgets the program's pinned and registered ranges (all of them: which device held a range is
 * not recorded; a forgotten range is classified by the driver again). The program sees the real
 * result. */
#include "driver_shapes.h"
#include "entry.h"
#include "hostmem/memkind.h"
#include "stage/pool.h"

CUresult shape_primary_reset(enum driver_entry_id id, SHAPE_primary_reset_P)
{
    ENTRY_PROLOGUE(primary_reset, dev);
    pool_drop_device(dev);
    CUresult result = real(dev);
    memkind_clear();
    return result;
}
