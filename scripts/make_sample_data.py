#!/usr/bin/python3
"""Writes sample_data/: a small LLM-style batch, its spec, and per-microbatch
model outputs with their spec. Deterministic: rerunning gives the same data.

    /usr/bin/python3 scripts/make_sample_data.py [OUT_DIR]
"""
import json
import os
import sys

import h5py
import numpy as np

B, S, H, W, V, VOCAB = 8, 32, 16, 16, 16, 1000
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "sample_data")


def write_batch(path, rng):
    with h5py.File(path, "w", track_order=False) as f:
        f.attrs["step"] = np.int64(1200)
        f.attrs["model_name"] = "tiny-vlm-0.1"
        ids = rng.integers(0, VOCAB, size=(B, S), dtype=np.int64)
        lengths = rng.integers(S // 2, S + 1, size=B)
        mask = np.arange(S)[None, :] < lengths[:, None]
        f["input_ids"] = np.where(mask, ids, 0)
        f["labels"] = np.where(mask, np.roll(ids, -1, axis=1), -100)
        f["attention_mask"] = mask
        # mRoPE: temporal, height and width position ids, batch on axis 1.
        f["position_ids"] = np.broadcast_to(np.arange(S, dtype=np.int64), (3, B, S)).copy()
        pix = rng.standard_normal((B, 3, H, W)).astype(np.float16)
        d = f.create_dataset("pixel_values", data=pix, chunks=(1, 3, H, W), compression="gzip",
                             compression_opts=4, shuffle=True)
        d.attrs["normalization"] = "imagenet"
        prompts = [f"Describe image {i}: " + "what is shown? " * int(rng.integers(1, 4)) for i in range(B)]
        f.create_dataset("prompts", data=prompts, dtype=h5py.string_dtype())
        f["temperature"] = np.float32(0.7)


def write_outputs(directory, rng, pieces=4):
    os.makedirs(directory, exist_ok=True)
    rows = B // pieces
    for i in range(pieces):
        with h5py.File(os.path.join(directory, f"out-{i:05d}.h5"), "w") as f:
            f.attrs["step"] = np.int64(1200)
            f.attrs["num_tokens"] = np.int64(rng.integers(rows * S // 2, rows * S))
            f["logits"] = rng.standard_normal((rows, S, V)).astype(np.float32)
            f["loss"] = np.float32(rng.uniform(1.5, 3.0))


def write_packed(path, rng, sequences=48):
    """A packed batch: sequences of skewed lengths back to back (no padding),
    described by cu_seqlens as FlashAttention's varlen kernels take it."""
    lengths = np.clip(rng.lognormal(mean=3.5, sigma=0.9, size=sequences), 4, 512).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    total = int(offsets[-1])
    with h5py.File(path, "w") as f:
        f.attrs["step"] = np.int64(1200)
        f["input_ids"] = rng.integers(0, VOCAB, size=total, dtype=np.int64)
        f["labels"] = np.roll(f["input_ids"][()], -1)
        f["position_ids"] = np.concatenate([np.arange(n) for n in lengths]).astype(np.int32)
        f["cu_seqlens"] = offsets
        f["doc_ids"] = np.array([f"doc-{i:04d}" for i in range(sequences)], dtype=h5py.string_dtype())
        # Derived per file ({"max_seqlen": ...}, {"num_tokens": ...} in packed_spec.json): a dataset and an attribute.
        f["max_seqlen"] = np.int32(lengths.max())
        f.attrs["num_tokens"] = np.int32(total)


def write_cp(directory, rng, cp_degree=2):
    """Context-parallel examples (--cp-degree 2): a padded batch whose sequence
    length, and a packed batch whose every document length, 2 x C divides."""
    with h5py.File(os.path.join(directory, "cp_batch.h5"), "w") as f:
        f["input_ids"] = rng.integers(0, VOCAB, size=(B, S), dtype=np.int64)
        f["labels"] = np.roll(f["input_ids"][()], -1, axis=1)
        f["position_ids"] = np.broadcast_to(np.arange(S, dtype=np.int32), (3, B, S))  # mRoPE [3, B, S]
        f["attention_mask"] = np.tril(np.ones((S, S), dtype=bool))[None, None].repeat(B, axis=0)  # [B, 1, S, S]
        f["loss_weight"] = np.ones(B, dtype=np.float32)
    lengths = 2 * cp_degree * np.clip(rng.lognormal(mean=2.2, sigma=0.8, size=24), 1, 64).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    with h5py.File(os.path.join(directory, "cp_packed.h5"), "w") as f:
        f["input_ids"] = rng.integers(0, VOCAB, size=int(offsets[-1]), dtype=np.int64)
        f["position_ids"] = np.concatenate([np.arange(n) for n in lengths]).astype(np.int32)
        f["cu_seqlens"] = offsets
        f["max_seqlen"] = np.int32(lengths.max())


def write_cp_specs(directory):
    with open(os.path.join(directory, "cp_batch_spec.json"), "w") as f:
        json.dump({"input_ids": {"split_axis": 0, "sequence_axis": 1}, "labels": {"split_axis": 0, "sequence_axis": 1},
                   "position_ids": {"split_axis": 1, "sequence_axis": 2},
                   "attention_mask": {"split_axis": 0, "sequence_axis": 2}, "loss_weight": 0}, f, indent=2)
        f.write("\n")
    with open(os.path.join(directory, "cp_packed_spec.json"), "w") as f:
        json.dump({"input_ids": {"packed": "/cu_seqlens"}, "position_ids": {"packed": "/cu_seqlens"},
                   "cu_seqlens": "offsets", "max_seqlen": {"max_seqlen": "/cu_seqlens"}}, f, indent=2)
        f.write("\n")


def write_train(directory, rng, documents=16):
    """A packed batch for the DP x PP x CP walk-through of docs/guide.md
    (--dp-degree 2, -n 4, --cp-degree 2 --cp-pad): documents of lengths 2C
    does not always divide, padded per CP rank as Transformer Engine's THD
    format expects (labels with -100, the loss's ignore index)."""
    lengths = rng.integers(3, 40, size=documents)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    total = int(offsets[-1])
    with h5py.File(os.path.join(directory, "train_packed.h5"), "w") as f:
        f["input_ids"] = rng.integers(1, VOCAB, size=total, dtype=np.int64)
        f["labels"] = np.roll(f["input_ids"][()], -1)
        f["position_ids"] = np.concatenate([np.arange(n) for n in lengths]).astype(np.int32)
        f["cu_seqlens"] = offsets
        f["doc_ids"] = np.arange(documents, dtype=np.int32)
    with open(os.path.join(directory, "train_packed_spec.json"), "w") as f:
        json.dump({"input_ids": {"packed": "/cu_seqlens"}, "labels": {"packed": "/cu_seqlens", "pad": -100},
                   "position_ids": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets",
                   "doc_ids": {"per_sequence": "/cu_seqlens"}}, f, indent=2)
        f.write("\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20261130)
    write_batch(os.path.join(OUT, "batch.h5"), rng)
    with open(os.path.join(OUT, "batch_spec.json"), "w") as f:
        json.dump({"input_ids": 0, "labels": 0, "attention_mask": 0, "position_ids": 1,
                   "pixel_values": {"split_axis": 0}, "prompts": 0, "temperature": "replicate"}, f, indent=2)
        f.write("\n")
    write_outputs(os.path.join(OUT, "model_outputs"), rng)
    write_packed(os.path.join(OUT, "packed.h5"), rng)
    with open(os.path.join(OUT, "packed_spec.json"), "w") as f:
        json.dump({"input_ids": {"packed": "/cu_seqlens"}, "labels": {"packed": "/cu_seqlens"},
                   "position_ids": {"packed": "/cu_seqlens"}, "cu_seqlens": "offsets",
                   "doc_ids": {"per_sequence": "/cu_seqlens"}, "max_seqlen": {"max_seqlen": "/cu_seqlens"},
                   "@num_tokens": {"num_tokens": "/cu_seqlens"}}, f, indent=2)
        f.write("\n")
    write_cp(OUT, rng)
    write_cp_specs(OUT)
    with open(os.path.join(OUT, "outputs_spec.json"), "w") as f:
        json.dump({"@num_tokens": {"reduce": "sum"}, "logits": 0, "loss": {"reduce": "mean"}}, f, indent=2)
        f.write("\n")
    write_train(OUT, rng)


if __name__ == "__main__":
    main()
