# fish completion for microbatch (installed in /usr/share/fish/vendor_completions.d).
# The option lists follow `microbatch COMMAND --help` (tests/e2e/test_docs.py).
set -l commands split merge inspect finish verify diff
complete -c microbatch -f
complete -c microbatch -n "not __fish_seen_subcommand_from $commands" -a split -d 'Cut a batch into microbatch files'
complete -c microbatch -n "not __fish_seen_subcommand_from $commands" -a merge -d 'Glue microbatch files back'
complete -c microbatch -n "not __fish_seen_subcommand_from $commands" -a inspect -d 'Show a file and a plan'
complete -c microbatch -n "not __fish_seen_subcommand_from $commands" -a finish -d 'Write the manifest of a split written by shards'
complete -c microbatch -n "not __fish_seen_subcommand_from $commands" -a verify -d 'Check a split directory against its manifest'
complete -c microbatch -n "not __fish_seen_subcommand_from $commands" -a diff -d 'Compare two files exactly'
complete -c microbatch -n "not __fish_seen_subcommand_from $commands" -s V -l version -d 'Print the version'

# Every command
complete -c microbatch -s h -l help -d 'Print help and exit'
complete -c microbatch -s q -l quiet -d 'Only print errors'
complete -c microbatch -s v -l verbose -d 'Print debug details'
complete -c microbatch -l log-level -x -a 'trace debug info warn error off'
complete -c microbatch -l stall-timeout -x -d 'Give up when no data moves for this many seconds'
complete -c microbatch -l no-sign-request -d 'Send s3:// requests unsigned (public buckets)'
complete -c microbatch -l sse -x -a 'AES256 aws:kms' -d 'Encrypt the objects written to S3'
complete -c microbatch -l sse-kms-key-id -x -d 'The KMS key of --sse aws:kms'
complete -c microbatch -l request-payer -x -a 'requester' -d 'Pay for a Requester Pays bucket'

# split and inspect: the plan
set -l planning "__fish_seen_subcommand_from split inspect"
complete -c microbatch -n $planning -s n -l chunks -x -d 'Number of microbatches'
complete -c microbatch -n $planning -l micro-batch-size -x -d 'Rows per microbatch'
complete -c microbatch -n $planning -l drop-last -d 'Leave out the rows after the last whole microbatch'
complete -c microbatch -n $planning -l allow-copies -d 'Allow a spec that splits no dataset'
complete -c microbatch -n $planning -l on-short -x -a 'error downsize empty'
complete -c microbatch -n $planning -l balance -x -a 'tokens sequences attention'
complete -c microbatch -n "__fish_seen_subcommand_from $commands" -s s -l spec -r -F -d 'Chunk-spec JSON'
complete -c microbatch -n "__fish_seen_subcommand_from $commands" -l spec-json -x -d 'The spec as JSON text'
complete -c microbatch -n "__fish_seen_subcommand_from split merge inspect" -l preset -x -a 'auto none netcdf anndata pandas' -d 'Default spec of a kind of file'
complete -c microbatch -n "__fish_seen_subcommand_from $commands" -l dp-degree -x -d 'Data-parallel shards'
complete -c microbatch -n "__fish_seen_subcommand_from $commands" -l align -d 'PaddlePaddle align mode'
complete -c microbatch -n "__fish_seen_subcommand_from $commands" -l layout -x -a 'per-microbatch per-rank'
complete -c microbatch -n "__fish_seen_subcommand_from $commands" -l cp-degree -x -d 'Context-parallel ranks'
complete -c microbatch -n "__fish_seen_subcommand_from split merge inspect" -l cp-pad -d 'Pad packed documents to a multiple of 2C'

# split and merge
set -l writing "__fish_seen_subcommand_from split merge"
complete -c microbatch -n $writing -s o -l output -r -F -d 'Output (directory for split, file for merge)'
complete -c microbatch -n $writing -l force -d 'Replace an earlier output'
complete -c microbatch -n $writing -l buffer-size -x -d 'MiB per read/write'
complete -c microbatch -n "__fish_seen_subcommand_from split" -s j -l jobs -x -d 'Worker processes'
complete -c microbatch -n "__fish_seen_subcommand_from split" -l shard -x -a auto -d 'Write shard K of P (K/P or auto)'
complete -c microbatch -n "__fish_seen_subcommand_from split" -l keep-local -x -a '(__fish_complete_directories)' -d 'With -o s3://, keep the files here too'
complete -c microbatch -n "__fish_seen_subcommand_from split" -l resume -d 'Continue an interrupted run of this command'
complete -c microbatch -n "__fish_seen_subcommand_from split" -l uploads -x -d 'With -o s3://, files uploaded at once'
complete -c microbatch -n "__fish_seen_subcommand_from finish" -a '(__fish_complete_directories)' -d 'Output directory of the shards'
complete -c microbatch -n "__fish_seen_subcommand_from finish" -l json -d 'Summary object on stdout'
complete -c microbatch -n "__fish_seen_subcommand_from verify" -a '(__fish_complete_directories)' -d 'Split directory'
complete -c microbatch -n "__fish_seen_subcommand_from verify diff" -l json -d 'Report object on stdout'
complete -c microbatch -n "__fish_seen_subcommand_from diff" -l storage -d 'Also compare layout, chunks, filters'
complete -c microbatch -n "__fish_seen_subcommand_from diff" -l limit -x -d 'Stop after N differences'
complete -c microbatch -n "__fish_seen_subcommand_from merge" -l virtual -d 'Virtual datasets over the inputs'
complete -c microbatch -n "__fish_seen_subcommand_from merge" -l no-verify -d 'Skip content digests'
complete -c microbatch -n "__fish_seen_subcommand_from merge" -l allow-unfinished -d 'Merge files of an unfinished split'
complete -c microbatch -n "__fish_seen_subcommand_from inspect" -l json -d 'Machine-readable output'
complete -c microbatch -n "__fish_seen_subcommand_from split merge" -l json -d 'Summary object on stdout'

# Batch and microbatch files
complete -c microbatch -n "__fish_seen_subcommand_from $commands" -k -a "(__fish_complete_suffix .h5) (__fish_complete_suffix .hdf5) (__fish_complete_suffix .nc) (__fish_complete_suffix .h5ad)"
