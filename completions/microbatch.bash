# bash completion for microbatch (installed as
# /usr/share/bash-completion/completions/microbatch). Self-contained: works
# with or without the bash-completion package. The option lists follow
# `microbatch COMMAND --help` (tests/e2e/test_docs.py checks them).

_microbatch_files() {  # files matching any of the globs given, and directories
  local IFS=$'\n' glob
  COMPREPLY=($(compgen -d -S / -- "$cur"))
  for glob in "$@"; do COMPREPLY+=($(compgen -f -X "!$glob" -- "$cur")); done
  compopt -o nospace -o filenames 2>/dev/null
}

_microbatch() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in split | merge | inspect | finish | verify | diff) cmd=${COMP_WORDS[i]}; break ;; esac
  done
  local common="-h --help -q --quiet -v --verbose --log-level --stall-timeout --no-sign-request --sse --sse-kms-key-id --request-payer"
  local plan="-s --spec --spec-json --preset -n --chunks --micro-batch-size --drop-last --allow-copies --on-short --balance --dp-degree --align --layout --cp-degree --cp-pad"
  case $prev in
    --on-short) COMPREPLY=($(compgen -W "error downsize empty" -- "$cur")); return ;;
    --balance) COMPREPLY=($(compgen -W "tokens sequences attention" -- "$cur")); return ;;
    --layout) COMPREPLY=($(compgen -W "per-microbatch per-rank" -- "$cur")); return ;;
    --log-level) COMPREPLY=($(compgen -W "trace debug info warn error off" -- "$cur")); return ;;
    --sse) COMPREPLY=($(compgen -W "AES256 aws:kms" -- "$cur")); return ;;
    --request-payer) COMPREPLY=($(compgen -W "requester" -- "$cur")); return ;;
    --sse-kms-key-id) return ;;
    -s | --spec) _microbatch_files '*.json'; return ;;
    -o | --output)
      if [[ $cmd == split ]]; then
        COMPREPLY=($(compgen -d -S / -- "$cur")); compopt -o nospace 2>/dev/null
      else
        _microbatch_files '*.h5' '*.hdf5' '*.nc' '*.h5ad'
      fi
      return ;;
    --spec-json) return ;;
    --preset) COMPREPLY=($(compgen -W "auto none netcdf anndata pandas" -- "$cur")); return ;;
    -n | --chunks | --micro-batch-size | --limit | --dp-degree | --cp-degree | --buffer-size | -j | --jobs | --uploads | --stall-timeout) return ;;
    --keep-local) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --shard) COMPREPLY=($(compgen -W "auto" -- "$cur")); return ;;
  esac
  if [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W "split merge inspect finish verify diff -V --version $common" -- "$cur"))
    return
  fi
  if [[ $cur == -* ]]; then
    local options
    case $cmd in
      split) options="$plan -o --output --force --resume --buffer-size -j --jobs --shard --keep-local --uploads --json" ;;
      merge) options="-s --spec --spec-json --preset -o --output --force --virtual --no-verify --allow-unfinished --dp-degree --align --layout --cp-degree --cp-pad --buffer-size --json" ;;
      inspect) options="$plan --json" ;;
      finish) options="--json" ;;
      verify) options="--json" ;;
      diff) options="--storage --limit --json" ;;
    esac
    COMPREPLY=($(compgen -W "$options $common" -- "$cur"))
    return
  fi
  if [[ $cmd == finish || $cmd == verify ]]; then
    COMPREPLY=($(compgen -d -S / -- "$cur")); compopt -o nospace 2>/dev/null
    return
  fi
  _microbatch_files '*.h5' '*.hdf5' '*.nc' '*.h5ad'
}

complete -F _microbatch microbatch
