"""The `packed` workload of bench/bench.py: a packed batch for DP x PP x CP
training (a million tokens in 10,000 documents of lengths divisible by
2C = 4: int32 input_ids and position_ids, int64 labels, int32 cu_seqlens
and per-document ids), split for --dp-degree 4, -n 8 microbatches and
--cp-degree 2 (64 files), and merged back; time and peak RSS of both
against `cp` of the same bytes."""
import json
import os

import h5py
import numpy as np

DOCUMENTS = 10_000
D, N, C = 4, 8, 2


def make_packed(path):
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 50, DOCUMENTS) * 2 * C  # mean 100 tokens
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    tokens = int(offsets[-1])
    with h5py.File(path, "w") as f:
        f["input_ids"] = rng.integers(0, 50_000, tokens, dtype=np.int32)
        f["labels"] = rng.integers(0, 50_000, tokens, dtype=np.int64)
        f["position_ids"] = np.concatenate([np.arange(k, dtype=np.int32) for k in lengths])
        f["cu_seqlens"] = offsets
        f["doc_ids"] = np.arange(DOCUMENTS, dtype=np.int32)


SPEC = {"input_ids": {"packed": "/cu_seqlens"}, "labels": {"packed": "/cu_seqlens"},
        "position_ids": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets",
        "doc_ids": {"per_sequence": "/cu_seqlens"}}


def bench_packed(work, binary, timed, clean, runs):
    src, spec = os.path.join(work, "packed.h5"), os.path.join(work, "packed-spec.json")
    if not os.path.exists(src):
        make_packed(src)
    with open(spec, "w") as f:
        json.dump(SPEC, f)
    mbdir, merged, copy = (os.path.join(work, n) for n in ("packed-mb", "packed-merged.h5", "packed-copy.h5"))
    flags = ["-n", str(N), "--dp-degree", str(D), "--cp-degree", str(C)]
    rows = {"microbatch split": timed([binary, "split", src, "-s", spec, *flags, "-o", mbdir, "-q"], [mbdir], runs),
            "microbatch merge": timed([binary, "merge", mbdir, "-o", merged, "-q"], [merged], runs),
            "cp": timed(["cp", src, copy], [copy], runs)}
    clean(mbdir, merged, copy)
    print(f"\npacked: {os.path.getsize(src) / 2**20:.0f} MiB input, {DOCUMENTS} documents, split for D = {D}, "
          f"N = {N}, C = {C} ({N * C} files)")
    for k, (secs, rss) in rows.items():
        print(f"  {k:18s} {secs:8.2f} s  {rss:8.1f} MiB peak RSS")
    cp = max(rows["cp"][0], 0.01)  # /usr/bin/time resolves 10 ms
    for op in ("split", "merge"):
        print(f"  {op}: {rows[f'microbatch {op}'][0] / cp:.2f}x the time of cp")
    return rows
