"""torch_neighbours.py: issue #10's program in the suite's protocol (tests/gpu/torch_neighbours.py is
its stand-alone form). 200 pageable 4 MB tensors copied .to("cuda") 4 times, freed, then 200 new
ones copied 4 times. glibc serves the first set with mmap; after they are freed its mmap threshold
has risen and the second set lies side by side on the heap, so registering one tensor's pages takes
in the start of its neighbour (a copy that starts inside a registration and runs past its end is
refused by the driver). It must not fail, and every copy must arrive intact.
Metrics: ms for the 4 passes of each set. Digest: every tensor of every pass as it arrived."""
import wl

NAME, COUNT, PASSES = "torch_neighbours", 200, 4

torch, dev, sync = wl.torch_or_skip(NAME)
rep = wl.Report(NAME)
rep.notes.update(wl.torch_versions(torch))
base = torch.arange(1000 * 1000, dtype=torch.float32) % 1009  # 4 MB


def one_set(key, label, first, expect):
    xs = [base + (first + i) for i in range(COUNT)]
    total = 0.0
    for p in range(PASSES):
        ys = []
        total += wl.timed(lambda: ys.extend(x.to(dev) for x in xs), sync, 1)[0]
        sums = []
        for y in ys:
            sums += wl.torch_sums(torch, y)
        rep.part("%s pass %d" % (key, p), wl.torch_collect(torch, sums))
    rep.metric(key, label, total * 1e3, "ms", expect)
    # xs is freed on return: the next set's allocations reuse the memory


one_set("set1", "200 x 4 MB pageable (mmap'd) .to(cuda), 4 passes", 0, "faster")
one_set("set2", "200 new 4 MB tensors (heap neighbours), 4 passes", 1000, "same")
rep.emit()
