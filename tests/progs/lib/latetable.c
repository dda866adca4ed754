/* latetable.c: a library that keeps a driver function in its own data, loaded (dlopen) after the
 * benchmarks' direct switch first looked for such tables, as JAX's runtime is imported after
 * PyTorch's in tests/bench/inprocess_ab.py (apiprog direct late). The function is handed in, so the
 * library links nothing. */
#include <cuda.h>
#include <stddef.h>

typedef CUresult (*latetable_htod_fn)(CUdeviceptr, const void *, size_t);

static latetable_htod_fn kept_htod; /* in this library's .bss, where the switch must look */

void latetable_keep(latetable_htod_fn fn);
void latetable_keep(latetable_htod_fn fn) { kept_htod = fn; }

int latetable_holds(latetable_htod_fn fn);
int latetable_holds(latetable_htod_fn fn) { return kept_htod == fn; }

CUresult latetable_htod(CUdeviceptr dst, const void *src, size_t n);
CUresult latetable_htod(CUdeviceptr dst, const void *src, size_t n) { return kept_htod(dst, src, n); }
