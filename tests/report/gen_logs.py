#!/usr/bin/env python3
"""gen_logs.py: writes synthetic pinshim logs (format 1, the shim's field order) for the report's
scale tests and throughput measurements: one file per rank, ranks spread over hosts, a training
loop's mix of copies (pageable batches passed, staged and registered, pinned async copies on two
streams with every 16th record device-timed, small .item()-style reads), and a summary record
whose rows, sites and syncs agree with the records. Deterministic for a seed.

usage: gen_logs.py OUTDIR [--files N] [--records TOTAL] [--ranks-per-host N] [--seed S]
"""
import argparse
import json
import os
import random

MIB = 1 << 20
# (weight, dir, host kind, action, async, sizes, site, func, host GB/s, device GB/s)
MIX = [
    (30, "h2d", "pageable", "pass", False, (4096, 65536, 1 * MIB), "libtorch_cuda.so+0x1a2b3c", "at::native::copy_", 8.0, 9.0),
    (8, "h2d", "pageable", "staged", False, (32 * MIB, 64 * MIB), "libtorch_cuda.so+0x1a2b3c", "at::native::copy_", 30.0, 40.0),
    (12, "h2d", "pageable", "registered", False, (4 * MIB,), "train+0x4010", "load_batch", 45.0, 50.0),
    (20, "h2d", "pinned", "pass", True, (4 * MIB, 16 * MIB), "libtorch_cuda.so+0x22c0d0", "at::native::copy_kernel", 2000.0, 52.0),
    (15, "d2h", "pinned", "pass", True, (1 * MIB, 4 * MIB), "train+0x4100", "fetch", 2500.0, 53.0),
    (10, "d2h", "pageable", "pass", False, (4, 4096), "libtorch_cpu.so+0x99f00", "at::native::_local_scalar_dense", 0.05, 0.1),
    (5, "d2h", "pageable", "staged", False, (8 * MIB,), "train+0x4300", "save_output", 20.0, 30.0),
]
WEIGHTS = [m[0] for m in MIX]
DEVICE_TIMING_EVERY = 16


def bucket_min(nbytes):
    """The summary's size bucket: powers of 4 from 4 KiB (0 below)."""
    if nbytes < 4096:
        return 0
    return 1 << (2 * ((nbytes.bit_length() - 1) // 2))


def transfer_line(seq, t_ns, host_ns, entry, d, nbytes, kind, action, is_async, stream, device, tid, site,
                  func, device_ns):
    src, dst = (kind, "device") if d == "h2d" else ("device", kind)
    line = ('{"type":"transfer","seq":%d,"t_ns":%d,"host_ns":%d,"entry":"%s","dir":"%s","bytes":%d,'
            '"src_kind":"%s","dst_kind":"%s","host_kind":"%s","async":%s,"stream":"%s","device":%d,'
            '"action":"%s","tid":%d,"site":"%s","func":"%s"'
            % (seq, t_ns, host_ns, entry, d, nbytes, src, dst, kind, "true" if is_async else "false", stream,
               device, action, tid, site, func))
    if device_ns is not None:
        line += ',"device_ns":%d' % device_ns
    return line + "}\n"


def write_process(path, rank, records, ranks_per_host, seed, start_wall):
    rng = random.Random(seed * 1000003 + rank)
    host = "node%d" % (rank // ranks_per_host)
    pid = 20000 + rank
    device = rank % ranks_per_host
    streams = ("0x%x" % (0x5600_0000_0000 + rank * 0x1000 + 0x640), "0x%x" % (0x5600_0000_0000 + rank * 0x1000 + 0x980))
    header = {"type": "header", "format": 1, "tool": "pinshim", "version": "0.1.0", "pid": pid, "ppid": 19999,
              "host": host, "rank": str(rank), "cmdline": ["python", "train.py", "--epochs", "1"],
              "start_wall_ns": start_wall + rank * 1_000_000, "start_mono_ns": 5_000_000_000 + rank,
              "policy": {"intercept": "on", "log": "logs/pinshim-%h-%p.jsonl", "device_timing": "on",
                         "device_timing_every": str(DEVICE_TIMING_EVERY)}}
    rows, sites, entries = {}, {}, {}
    syncs = 0
    sync_ns = 0
    t = 50_000_000
    with open(path, "w") as f:
        f.write(json.dumps(header, separators=(",", ":")) + "\n")
        f.write('{"type":"driver","driver_version":13000,"devices":["Synthetic H200"]}\n')
        for seq in range(1, records + 1):
            _, d, kind, action, is_async, sizes, site, func, host_gbps, dev_gbps = rng.choices(MIX, WEIGHTS)[0]
            nbytes = rng.choice(sizes)
            jitter = rng.uniform(0.8, 1.25)
            host_ns = max(200, int(nbytes / host_gbps * jitter) + 3000)
            device_ns = None
            if seq % DEVICE_TIMING_EVERY == 0:
                device_ns = max(1000, int(nbytes / dev_gbps * jitter) + 1500)
            stream = streams[seq % 2] if is_async else "0x1"
            entry = ("cuMemcpyHtoDAsync_v2" if is_async else "cuMemcpyHtoD_v2") if d == "h2d" else \
                    ("cuMemcpyDtoHAsync_v2" if is_async else "cuMemcpyDtoH_v2")
            f.write(transfer_line(seq, t, host_ns, entry, d, nbytes, kind, action, is_async, stream, device, pid,
                                  site, func, device_ns))
            t += host_ns + rng.randint(2_000, 400_000)
            key = (d, kind, bucket_min(nbytes), action)
            row = rows.setdefault(key, [0, 0, 0])
            row[0] += 1
            row[1] += nbytes
            row[2] += host_ns
            s = sites.setdefault((site, func), [0, 0, 0, {}])
            s[0] += 1
            s[1] += nbytes
            s[2] += host_ns
            s[3][kind] = s[3].get(kind, 0) + 1
            entries[entry] = entries.get(entry, 0) + 1
            if is_async and seq % 8 == 0:
                syncs += 1
                sync_ns += rng.randint(20_000, 900_000)
        summary = {
            "type": "summary", "pid": pid, "ppid": 19999, "program": "python", "version": "0.1.0",
            "transfers": [{"dir": d, "host_kind": k, "bucket_min": b, "count": r[0], "bytes": r[1], "host_ns": r[2],
                           "action": a, "gbps": round(r[1] / r[2], 3)} for (d, k, b, a), r in rows.items()],
            "failed_copies": 0,
            "syncs": [{"call": "cuStreamSynchronize", "count": syncs, "host_ns": sync_ns}],
            "entry_points": entries, "dropped": 0,
            "sites": [{"site": s, "func": fn, "count": v[0], "bytes": v[1], "host_ns": v[2], "kinds": v[3]}
                      for (s, fn), v in sorted(sites.items(), key=lambda kv: -kv[1][2])[:20]],
            "advice": [{"rule": "pin-hot-buffer", "message": "h2d pageable copies at libtorch_cuda.so+0x1a2b3c "
                        "(at::native::copy_): use pin_memory() or cudaHostRegister on the source buffer",
                        "est_saving_ns": rows.get(("h2d", "pageable", 1 * MIB, "pass"), [0, 0, 0])[2] // 2}],
        }
        f.write(json.dumps(summary, separators=(",", ":")) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--records", type=int, default=1_000_000, help="transfer records in all")
    parser.add_argument("--ranks-per-host", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    start_wall = 1_700_000_000_000_000_000
    for rank in range(args.files):
        records = args.records // args.files + (1 if rank < args.records % args.files else 0)
        write_process(os.path.join(args.outdir, "pinshim-rank%04d.jsonl" % rank), rank, records,
                      args.ranks_per_host, args.seed, start_wall)


if __name__ == "__main__":
    main()
