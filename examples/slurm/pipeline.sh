#!/bin/bash
# The whole chain, each job starting only if the one before succeeded:
# split (an array of TASKS shards, default 8) -> finish -> TRAIN (an sbatch
# script reading MB_DIR, writing OUT_DIR/out-K.h5 per microbatch) -> merge.
#   pipeline.sh INPUT SPEC MB_DIR N TRAIN OUT_DIR OUT_SPEC MERGED
# Run it from a directory every node sees (the jobs' logs go there), with
# paths every node sees. It prints the four job ids.
set -euo pipefail
input=$1 spec=$2 mb=$3 count=$4 train=$5 outputs=$6 out_spec=$7 merged=$8
here=$(dirname "$(readlink -f "$0")")
submit() { local id; id=$(sbatch --parsable "$@") || exit 1; echo "${id%%;*}"; }  # "JOB;CLUSTER" on a federation
shopt -s inherit_errexit  # a failed submit stops the chain
split=$(submit --array=0-$((${TASKS:-8} - 1)) "$here/split.sbatch" "$input" "$spec" "$mb" "$count")
finish=$(submit --dependency=afterok:"$split" "$here/finish.sbatch" "$mb")
trained=$(submit --dependency=afterok:"$finish" "$train" "$mb" "$outputs")
merge=$(submit --dependency=afterok:"$trained" "$here/merge.sbatch" "$outputs" "$out_spec" "$merged")
echo "split=$split finish=$finish train=$trained merge=$merge"
