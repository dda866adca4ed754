"""torch_fresh.py: a tensor just computed on the CPU, (base + i), sent .to("cuda") once: nothing to reuse,
so only staging can help (from stage_min_bytes, 4 MiB; smaller copies pass to the driver). Sizes 1, 4, 8
MiB (30 copies each), 64 MiB (8), 256 MiB (4), 1 GiB (3), each size after one warm-up copy, and for
reference the 4 MiB and 64 MiB copies from a preallocated pinned tensor. Only the copy and its
synchronize are timed, not the computation. Metrics: ms per copy (median). Digest: every copy as it
arrived on the GPU. --sizes MIB[,MIB...] copies only those of the sizes (compare_builds.py: the
small copies without the seconds the large ones take)."""
import argparse

import wl

NAME = "torch_fresh"
MiB = 1 << 20
SIZES = [(1 * MiB, 30), (4 * MiB, 30), (8 * MiB, 30), (64 * MiB, 8), (256 * MiB, 4), (1024 * MiB, 3)]
PINNED_SIZES = (4 * MiB, 64 * MiB)


def human(nbytes):
    return "%d GiB" % (nbytes >> 30) if nbytes >= 1 << 30 else "%d MiB" % (nbytes >> 20)


def key_of(nbytes):
    return human(nbytes).replace(" ", "")


parser = argparse.ArgumentParser(description="fresh pageable tensors .to(cuda), per size")
parser.add_argument("--sizes", metavar="MIB[,MIB...]", help="only these sizes, in MiB, of %s" %
                    ",".join(str(n >> 20) for n, _ in SIZES))
sizes = wl.chosen(parser, "--sizes", parser.parse_args().sizes, [str(n >> 20) for n, _ in SIZES], "sizes in MiB")
SIZES = [(n, iters) for n, iters in SIZES if str(n >> 20) in sizes]

torch, dev, sync = wl.torch_or_skip(NAME)
rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))
pattern = torch.arange(4096, dtype=torch.float32)

for nbytes, iters in SIZES:
    base = pattern.repeat(nbytes // 4 // 4096)
    times, sums = [], []
    for i in range(1 + iters):
        x = base + i  # fresh pageable memory, just written
        got = []
        t = wl.timed(lambda: got.append(x.to(dev)), sync, 1)[0]
        if i:
            times.append(t)
        sums += wl.torch_sums(torch, got[0])
        del x, got
    rep.part(key_of(nbytes), wl.torch_collect(torch, sums))
    rep.metric(key_of(nbytes), "fresh %s pageable tensor .to(cuda), per copy" % human(nbytes),
               wl.median(times) * 1e3, "ms", "faster" if nbytes >= 8 * MiB else "same")
    del base

if not wl.cpu_test_mode():
    for nbytes in PINNED_SIZES:
        p = wl.torch_pinned_empty(torch, nbytes // 4, torch.float32)
        p.copy_(pattern.repeat(nbytes // 4 // 4096))
        got = [None]

        def copy_pinned():
            got[0] = p.to(dev, non_blocking=True)

        times = wl.timed(copy_pinned, sync, 11)[1:]
        rep.metric(key_of(nbytes) + "_pinned", "ref: %s from a preallocated pinned tensor" % human(nbytes),
                   wl.median(times) * 1e3, "ms", "same", True)
        rep.part(key_of(nbytes) + " pinned", wl.torch_collect(torch, wl.torch_sums(torch, got[0])))
        del p, got
rep.emit()
