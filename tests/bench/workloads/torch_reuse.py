"""torch_reuse.py: the same pageable CPU tensors copied .to("cuda") pass after pass (a dataset held in
memory, weights re-sent): 1000 tensors of 4 KB and 200 tensors of 4 MB, blocking and non_blocking=True,
and for reference the same copies from pinned tensors (the ceiling). Each variant: 3 warm-up passes (the
shim registers a buffer at its third copy), then 4 measured passes. Metrics: ms per pass (median of the
measured passes). Digest: every tensor as it arrived, last pass of each variant. Notes, under rows, for
each variant's measured passes: the CPU level right after them (control_us, wl.control_us: the median of
5), their wall time and the CPU time the main thread, the shim's threads and the others used meanwhile,
and the busiest others by name: whether a row was slower because the process met a slower CPU level, or
because other threads were busy beside it (the 4 KB pinned reference after the 4 MB rows, HISTORY.md).
--keys KEY[,KEY...] runs only those variants (compare_builds.py: the 4 KB copies without the 4 MB ones'
seconds). --copies N makes a 4 KB pass N copies (default 1000: each tensor once; more go round the 1000
again): a cost per copy keeps its ratio as N changes, a cost per pass (one each lockstep turn: caches
refilled after the other processes' turns) shrinks as N grows."""
import argparse

import wl

NAME, WARMUP, PASSES = "torch_reuse", 3, 4
KEYS = ("4KB", "4KB_nb", "4MB", "4MB_nb", "4KB_pinned", "4MB_pinned")

parser = argparse.ArgumentParser(description="the same pageable tensors .to(cuda) pass after pass")
parser.add_argument("--keys", metavar="KEY[,KEY...]", help="only these variants, of %s" % ",".join(KEYS))
parser.add_argument("--copies", metavar="N", type=int, default=1000,
                    help="copies in a 4 KB pass, 1 to 100000 (default 1000)")
args = parser.parse_args()
chosen = wl.chosen(parser, "--keys", args.keys, KEYS, "variants")
if not 1 <= args.copies <= 100000:
    parser.error("--copies must be 1 to 100000, not %d" % args.copies)

torch, dev, sync = wl.torch_or_skip(NAME)
rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))

small_base = torch.arange(1024, dtype=torch.float32)          # 4 KB
big_base = torch.arange(1000 * 1000, dtype=torch.float32) % 1009  # 4 MB, as tests/gpu/torch_reuse.py
small = [small_base + i for i in range(1000)]
big = [big_base + i for i in range(200)] if chosen & {"4MB", "4MB_nb", "4MB_pinned"} else []


def one_pass_of(xs):
    """A 4 KB pass: --copies of the tensors xs, round the list."""
    return [xs[i % len(xs)] for i in range(args.copies)]


def run(key, label, xs, non_blocking, expect, ref=False):
    if key not in chosen:
        return
    result = []

    def one_pass():
        result[:] = [x.to(dev, non_blocking=non_blocking) for x in xs]

    wl.timed(one_pass, sync, WARMUP)
    start = wl.cpu_reading()
    times = wl.timed(one_pass, sync, PASSES)
    wl.note_row_level(rep, key, start, times)
    rep.metric(key, label, wl.median(times) * 1e3, "ms", expect, ref)
    sums = []
    for y in result:
        sums += wl.torch_sums(torch, y)
    rep.part(key, wl.torch_collect(torch, sums))


run("4KB", "%d x 4 KB pageable .to(cuda), per pass" % args.copies, one_pass_of(small), False, "same")
run("4KB_nb", "%d x 4 KB pageable .to(cuda, non_blocking), per pass" % args.copies, one_pass_of(small), True, "same")
run("4MB", "200 x 4 MB pageable .to(cuda), per pass", big, False, "faster")
run("4MB_nb", "200 x 4 MB pageable .to(cuda, non_blocking), per pass", big, True, "faster")
if not wl.cpu_test_mode():
    # One pinned allocation per size, cut into views: 1200 separate cudaHostAlloc calls would cost seconds.
    if "4KB_pinned" in chosen:
        pinned_small = list(torch.stack(small).pin_memory().unbind(0))
        run("4KB_pinned", "ref: the 4 KB copies from pinned memory", one_pass_of(pinned_small), True, "same", True)
    if "4MB_pinned" in chosen:
        pinned_big = list(torch.stack(big).pin_memory().unbind(0))
        run("4MB_pinned", "ref: the 4 MB copies from pinned memory", pinned_big, True, "same", True)
rep.emit()
