#!/usr/bin/env bash
# The main job on sample_data/: split the batch into 4 microbatches, merge
# them back, and show with microbatch diff that the round trip is exact; then merge the
# per-microbatch model outputs with reducers.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh demo
# -O2 without debug information: a first result sooner (scripts/test.sh builds again with debug information)
scripts/build.sh -DBUILD_TESTING=OFF -DMB_MPI=AUTO -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  >/dev/null
mb=build/microbatch
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
set -x
$mb inspect sample_data/batch.h5 -s sample_data/batch_spec.json -n 4
$mb split sample_data/batch.h5 -s sample_data/batch_spec.json -n 4 -o "$out/mb"
ls "$out/mb"
$mb merge "$out/mb" -o "$out/merged.h5"
$mb diff sample_data/batch.h5 "$out/merged.h5" && echo "round trip exact"
$mb merge sample_data/model_outputs/out-*.h5 -s sample_data/outputs_spec.json -o "$out/outputs.h5"
h5dump -a /num_tokens -d /loss "$out/outputs.h5"
# packed variable-length sequences: whole sequences per microbatch, balanced on tokens
$mb inspect sample_data/packed.h5 -s sample_data/packed_spec.json -n 4 | tail -7
$mb split sample_data/packed.h5 -s sample_data/packed_spec.json -n 4 -o "$out/packed"
# max_seqlen and @num_tokens are recomputed for each microbatch from its own offsets
h5dump -d /max_seqlen -a /num_tokens "$out"/packed/microbatch-00001.h5 | grep -E 'DATASET|ATTRIBUTE|\(0\)'
$mb merge "$out/packed" -o "$out/packed.h5"
$mb diff sample_data/packed.h5 "$out/packed.h5" && echo "packed round trip exact"
# context parallelism: each sequence (and each packed document) cut into 2C chunks, CP rank r holds r and 2C-1-r
$mb inspect sample_data/cp_batch.h5 -s sample_data/cp_batch_spec.json -n 2 --cp-degree 2 | grep -E 'input_ids|context|rank'
$mb split sample_data/cp_batch.h5 -s sample_data/cp_batch_spec.json -n 2 --cp-degree 2 -o "$out/cp"
ls "$out/cp"
$mb merge "$out/cp" -o "$out/cp.h5"
$mb diff sample_data/cp_batch.h5 "$out/cp.h5" && echo "CP round trip exact"
$mb inspect sample_data/cp_packed.h5 -s sample_data/cp_packed_spec.json -n 2 --cp-degree 2 | tail -4
$mb split sample_data/cp_packed.h5 -s sample_data/cp_packed_spec.json -n 2 --cp-degree 2 -o "$out/cp_packed"
$mb merge "$out/cp_packed" -o "$out/cp_packed.h5"
$mb diff sample_data/cp_packed.h5 "$out/cp_packed.h5" && echo "packed CP round trip exact"
# a DP x PP x CP training layout: 16 packed documents cut into 2 ranks x 4 microbatches of whole documents,
# each padded for 2 CP ranks as Transformer Engine's THD format expects (labels padded with -100)
$mb inspect sample_data/train_packed.h5 -s sample_data/train_packed_spec.json -n 4 --dp-degree 2 --cp-degree 2 --cp-pad | grep -E 'microbatch [0-9]:|largest'
$mb split sample_data/train_packed.h5 -s sample_data/train_packed_spec.json -n 4 --dp-degree 2 --cp-degree 2 --cp-pad -o "$out/train"
h5dump -d /cu_seqlens -d /cu_seqlens_padded "$out"/train/cp-00000-microbatch-00002.h5 | grep -E 'DATASET|\(0\)'
$mb merge "$out/train" -o "$out/train.h5"
$mb diff sample_data/train_packed.h5 "$out/train.h5" && echo "padded DP x CP round trip exact"
