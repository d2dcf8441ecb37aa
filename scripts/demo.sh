#!/usr/bin/env bash
# The main job on sample_data/: split the batch into 4 microbatches, merge
# them back, and show that h5diff finds the round trip exact; then merge the
# per-microbatch model outputs with reducers.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh >/dev/null
mb=build/microbatch
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
set -x
$mb inspect sample_data/batch.h5 -s sample_data/batch_spec.json -n 4
$mb split sample_data/batch.h5 -s sample_data/batch_spec.json -n 4 -o "$out/mb"
ls "$out/mb"
$mb merge "$out/mb" -o "$out/merged.h5"
h5diff sample_data/batch.h5 "$out/merged.h5" && echo "round trip exact: h5diff found no difference"
$mb merge sample_data/model_outputs/out-*.h5 -s sample_data/outputs_spec.json -o "$out/outputs.h5"
h5dump -a /num_tokens -d /loss "$out/outputs.h5"
# packed variable-length sequences: whole sequences per microbatch, balanced on tokens
$mb inspect sample_data/packed.h5 -s sample_data/packed_spec.json -n 4 | tail -7
$mb split sample_data/packed.h5 -s sample_data/packed_spec.json -n 4 -o "$out/packed"
# max_seqlen and @num_tokens are recomputed for each microbatch from its own offsets
h5dump -d /max_seqlen -a /num_tokens "$out"/packed/microbatch-00001.h5 | grep -E 'DATASET|ATTRIBUTE|\(0\)'
$mb merge "$out/packed" -o "$out/packed.h5"
h5diff sample_data/packed.h5 "$out/packed.h5" && echo "packed round trip exact: h5diff found no difference"
