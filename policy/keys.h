/* keys.h: the one table of policy keys. Each row drives the parser, the PINSHIM_<KEY>
 * environment override, the README's key table and `pinshim --help`.
 * X(type, name, default, choices (ENUM only, '|'-separated), one-line help)
 * Types: BOOL (on/off, 1/0, true/false, yes/no), SIZE (bytes, K/M/G suffixes, powers of 1024),
 * COUNT (a whole number), ENUM (one of the choices), STRING (free text). */
#ifndef PINSHIM_POLICY_KEYS_H
#define PINSHIM_POLICY_KEYS_H

#define PINSHIM_POLICY_KEYS(X)                                                                   \
    X(BOOL, intercept, "on", "",                                                               \
      "observe copies; off = pure pass-through: no wrappers handed out, no counting, no output") \
    X(ENUM, summary, "text", "text|json|none",                                                 \
      "exit summary: a table (text), one JSON object (json), or nothing (none)")              \
    X(STRING, log, "", "",                                                                     \
      "JSON Lines log file: header, per-transfer records, summary record last (%p pid, %h host, %r rank, %t start time, %% a %); empty = summary on stderr") \
    X(ENUM, log_level, "transfers", "summary|transfers",                                       \
      "what the log holds: header, the call sites' module records and summary only (summary), or also one record per transfer (transfers)") \
    X(SIZE, log_min_bytes, "0", "",                                                            \
      "transfers smaller than this get no record of their own in the log (they are still counted)") \
    X(SIZE, log_buffer_bytes, "8M", "",                                                        \
      "memory for records not yet written; when it is full, records are dropped and counted") \
    X(BOOL, device_timing, "off", "",                                                          \
      "time sampled logged copies on the device with a pair of events on their stream (device_ns)") \
    X(COUNT, device_timing_every, "16", "",                                                    \
      "with device_timing, time one logged copy in this many") \
    X(ENUM, sync_timing, "adaptive", "adaptive|all",                                           \
      "blocking synchronizes: time every call (all), or (adaptive) one in 4, counted 4-fold, on a thread whose last 256 timed ones each returned within 20 us, until one takes longer") \
    X(COUNT, sample_seed, "0", "",                                                             \
      "the seed of the random choice of which calls' host time is measured (one in 16 counted copies, event records and queries; one in 4 short synchronizes): 0 = from the clock, a new choice each run; another number (its low 32 bits) makes every thread's choice repeat from run to run (the build's profile training uses 1, so that the library's layout does not follow a random draw)") \
    X(BOOL, strict, "off", "",                                                                 \
      "exit with status 2 when the policy file or a PINSHIM_* value is invalid, instead of running with defaults") \
    X(BOOL, stage, "on", "",                                                                   \
      "copy pageable host memory through a pool of pinned buffers, several threads filling the next chunk while the DMA moves this one") \
    X(SIZE, stage_min_bytes, "4M", "",                                                         \
      "stage pageable H2D copies of at least this many bytes; smaller ones pass to the driver, which is as fast there (staged 1 MiB copies took twice the driver's time on an H100)") \
    X(SIZE, stage_d2h_min_bytes, "64K", "",                                                    \
      "stage pageable D2H copies of at least this many bytes (the driver's pageable D2H path is slow from 64K up)") \
    X(BOOL, stage_hugepages, "on", "",                                                         \
      "before a staged D2H fills a tracked allocation (pin_on_reuse tracks them) in full, ask for transparent huge pages on its whole page range (only in the system's THP madvise mode, and never once the program gives huge-page advice of its own): 512 times fewer first-touch faults; 8 D2H copies of 64 MiB into fresh PyTorch tensors took 20.8-21.2 ms against 21.6-22.0 without it on an H200 host (18.2-18.5 against 19.9-20.6 with 8M chunks). Whatever this key says, a destination the program itself advised MADV_HUGEPAGE (NumPy does for arrays of 4 MiB and more) is written a 2 MiB block per thread") \
    X(BOOL, stage_recycle, "on", "",                                                           \
      "once the process has made a staged D2H into a fresh malloc'd buffer, keep the resident 2 MiB blocks of tracked allocations it frees (moved with mremap, nothing copied; only as many bytes as such copies wrote since) and move them over the blocks of later staged D2H destinations that the copy writes in full and that have no pages yet, instead of the kernel faulting in and zeroing new ones (only into malloc'd destinations advised huge pages; the program reads the same bytes). 8 D2H copies of 64 MiB into fresh PyTorch tensors, freed each round: 17.1 ms against 21.3 with it off on an H100 host (7 rounds); cp.asnumpy of 256 MiB 6.89 ms against 10.1. The freed memory stays resident until a copy takes it or stage_recycle_keep_ms passes") \
    X(SIZE, stage_recycle_max_bytes, "0", "",                                                  \
      "with stage_recycle, the most freed memory kept at once (the oldest goes back first); 0 = 1/16 of RAM, at most 1G") \
    X(COUNT, stage_recycle_keep_ms, "2000", "",                                                \
      "with stage_recycle, freed memory no copy took within this many milliseconds goes back to the system (a thread of the shim's own gives it back)") \
    X(SIZE, stage_chunk_bytes, "16M", "",                                                      \
      "size of one pinned chunk: the unit of the memcpy/DMA pipeline (on an H200 host with 32 threads, 8M made 8 D2H copies of 64 MiB into fresh tensors 7% faster but a fresh 64 MiB H2D take 4.8-5.3 ms against 2.5-3.9)") \
    X(SIZE, stage_d2h_first_bytes, "2M", "",                                                   \
      "a staged D2H larger than a chunk moves this many bytes in its first DMA (0 = a whole chunk), so that the copy-out starts after a short DMA instead of a whole chunk's; the later DMAs are whole chunks (8 D2H copies of 64 MiB into fresh PyTorch tensors on an H100: 30.9 ms with 2M against 37.0 with 0, 6 rounds)") \
    X(ENUM, stage_stores, "streaming", "normal|streaming",                                       \
      "how staging threads write pinned chunks for a H2D: ordinary stores (normal) or non-temporal stores that skip reading each line first (streaming)") \
    X(COUNT, stage_threads, "0", "",                                                           \
      "threads that memcpy into and out of the pool, the calling thread included; 0 = min(cores the process may run on, by its CPU affinity, 32)") \
    X(COUNT, stage_h2d_threads, "0", "",                                                       \
      "of those, how many share the copies into the pool (H2D), the calling thread included; 0 = min(those cores, 16) (fresh 64 MiB PyTorch tensors .to(\"cuda\"): on a 16-core H100 host 3.58 ms with 16 threads, 3.71 with 8, 1.83 and 2.09 with OMP_WAIT_POLICY=passive; on a 32-core H200 host 3.0 with 16, 2.97 with 8, 4.85 with 32)") \
    X(ENUM, stage_openmp, "spinning", "spinning|off",                                           \
      "a staged copy made on the process's main thread while the program's OpenMP team spins after a parallel region (PyTorch's does after any CPU operation) runs its memcpy as parallel regions of that team, as many of its threads as stage_h2d_threads (into the pool) or stage_threads (out of it) allow (spinning), instead of waking staging threads that would wait for its cores; only while the program, not the shim, keeps the team spinning; off = the staging threads only (a fresh 64 MiB PyTorch tensor .to(\"cuda\") on H100 hosts: 1.84-1.92 ms against 3.2-5.9 with off and 8.85-9.59 without the shim; a process's first 64 MiB .to(\"cpu\") 5.9-6.3 against 8.0-10.1; on a 32-core H200 host, PyTorch's team of 32 held to the default 16: fresh 4 MiB 0.190 ms against 0.209 with all 32, 1 GiB 25.7 against 27.1, peak resident memory about 3130 against 3390 MiB)") \
    X(COUNT, stage_slice_us, "0", "",                                                          \
      "the scheduler slice, in microseconds, each of those threads asks Linux for (sched_setattr's sched_runtime; kernels from 6.12 use it, clamped to 100-100000; 0 = the kernel's own): a shorter one lets a staging thread that wakes take its core from a thread in the middle of a long one, such as PyTorch's OpenMP threads spinning after a parallel region (a fresh 64 MiB tensor .to(\"cuda\") on a 16-core H200 host, 2.69 ms with 100 against 4.25 with 0 in one run of 4 rounds, but 4.27 against 3.86 and 4.44 against 4.29 in two later runs of 5 and 7 rounds on an H200 and an H100: no consistent gain, so off)") \
    X(SIZE, pool_max_bytes, "0", "",                                                           \
      "cap on pinned pool memory; at the cap staging waits for the oldest chunk; 0 = 1/16 of RAM, at most 1G. A copy whose own stream's queued DMAs hold every free chunk waits for them rather than growing the pool (a fresh 1 GiB PyTorch tensor .to(\"cuda\") on an H100 kept it at 128 MiB, where it had grown to 384 MiB without that rule, in the same time)") \
    X(SIZE, pool_slab_bytes, "128M", "",                                                       \
      "pinned memory is allocated in slabs of this size, cut into chunks and reused (with pool_pin=alloc, never under 2 MiB: the driver shares smaller pinned allocations with the program's, changing their flags). 128M holds one thread's deepest pipeline (a D2H's 6 chunks and the one kept free), so a process's first large copy does not grow the pool while it runs (its first 64 MiB fresh PyTorch tensor .to(\"cuda\") on H100 instances, 3 runs: 4.8-5.4 ms against 6.7-8.5 with 64M; its first .to(\"cpu\"), 2 runs: 7.1-8.3 against 10.0-10.6); each process holds that much pinned memory from its first context on") \
    X(ENUM, pool_pin, "register", "register|alloc",                                            \
      "how a slab is pinned: register = the shim maps it and faults it in itself, then cuMemHostRegister (the driver is held for a small part of the time, and other threads' copies wait while it is); alloc = cuMemHostAlloc") \
    X(BOOL, pool_grow_inline, "off", "",                                                       \
      "allocate slabs on the copying thread (that copy waits milliseconds); off = in the background, the copy passes through meanwhile") \
    X(ENUM, pool_prewarm, "context", "context|copy|off",                                        \
      "when to start allocating the pool's first slab in the background, so that the first copy large enough to stage finds it ready: when the program first retains a primary context (context; a program that makes its own contexts: as copy), at its first pageable copy of any size (copy), or at that first large copy, which then passes through (off). A process's first 64 MiB D2H into a fresh PyTorch tensor on an H100: 9.1 ms with context, 21.5 with copy, 47.9 without the shim") \
    X(BOOL, link_probe, "on", "",                                                              \
      "when the pool gets its first pinned memory on a device, time a few pinned copies (a few ms, on the shim's own stream) to know the link's real bandwidth for the advice and the summary") \
    X(SIZE, track_min_bytes, "1M", "",                                                         \
      "host allocations (malloc family, anonymous mmap) of at least this many bytes are tracked for pin-on-reuse") \
    X(BOOL, pin_on_reuse, "on", "",                                                            \
      "register (cuMemHostRegister) a tracked pageable allocation once register_after copies touched it; later copies go at pinned speed") \
    X(COUNT, register_after, "3", "",                                                          \
      "copies touching a tracked allocation before it is registered (registering costs about what 1 to 5 pinned copies save)") \
    X(SIZE, register_max_bytes, "0", "",                                                       \
      "cap on memory registered by pin-on-reuse; least recently used registrations go first; 0 = 1/8 of RAM") \
    X(ENUM, guard, "off", "off|warn|repair|abort",                                             \
      "protect the pages of async D2H copies into pinned memory until a sync covers them; a read or write before that is reported (warn), made correct by waiting for the copy (repair), or aborts") \
    X(ENUM, guard_pages, "all", "all|first",                                                   \
      "with guard, protect every whole page of the destination (all) or only its first whole page (first: cheaper for large copies, catches reads that start at the beginning)") \
    X(COUNT, guard_exitcode, "0", "",                                                          \
      "with guard, exit with this status at exit when at least one race was reported; 0 = keep the program's status") \
    X(ENUM, guard_stack, "folded", "folded|full",                                              \
      "with guard, the access stack in a report: runs of frames in one library folded into one line, Python library frames counted (folded), or every frame (full)") \
    X(BOOL, python_sites, "on", "",                                                            \
      "in a CPython process, give each logged or guarded copy the Python line it was made from (py_site, py_func), read from the thread's frames without the GIL") \
    X(STRING, python_skip, "/site-packages/,/dist-packages/,/lib/python3,<frozen ,/torch/,/cupy/,/cupyx/,/jax/,/jaxlib/,/numpy/", "", \
      "comma-separated path fragments: Python frames whose file contains one are library code, skipped when looking for the program's line")

#endif
