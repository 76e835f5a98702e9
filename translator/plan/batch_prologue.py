"""The batch-step prologue: bash run once, on the batch pod, before the body of the batch script.

Slurm runs the batch script once, on the first node of the allocation; only `srun` starts work on
the other nodes, as a job step. On Kubernetes the batch pod is the TrainJob's launcher (multi-node
jobs: the Trainer's MPI policy, whose hostfile names every pod) or the only pod (single-node jobs).
This prologue defines, in the batch shell:

* `_s2k_hostv` / `_s2k_hosts`: the allocation's hosts in Slurm order: the batch pod first, then the
  other pods in hostfile order (names as the hostfile writes them, `<pod>.<trainjob>`);
* the batch step's Slurm variables (sbatch.1 OUTPUT ENVIRONMENT): node lists, SLURM_NODEID=0, ...;
* `scontrol show hostname(s)`;
* `srun`: a job step with srun(1)'s layout (block distribution) whose tasks start through Open MPI's
  `mpirun` over ssh (or as local processes when every task is on the batch pod), each in a small
  wrapper that sets the task's Slurm variables and then execs the user's command (docs/batch-mode.md).

Nothing here contains text from the script except shell-quoted job values; the user's words given to
`srun` stay arguments ("$@") from the batch shell to the task.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from translator.plan import prologue

#: The ssh arguments of every step's mpirun (the Trainer's node pods run sshd on port 2222; their host
#: keys are new on every run, and the pods may come up after the launcher).
SSH_ARGS = "-p 2222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectionAttempts=10"

# ---- the allocation's hosts -------------------------------------------------------------------

HOSTS = [
    "_s2k_load_hosts() {  # slurm2kf: the allocation in Slurm order: the batch pod, then the hostfile's other pods",
    '  local f="${OMPI_MCA_orte_default_hostfile:-/etc/mpi/hostfile}" me h rest first=""',
    '  me="$(hostname 2>/dev/null || echo "${HOSTNAME:-localhost}")"',
    "  _s2k_hostv=()",
    '  if [ ! -r "$f" ]; then _s2k_hostv=("$me"); return 0; fi',
    '  while read -r h rest || [ -n "$h" ]; do',
    '    case "$h" in ""|"#"*) continue ;; esac',
    '    if [ -z "$first" ] && { [ "$h" = "$me" ] || [ "${h%%.*}" = "${me%%.*}" ]; }; then first="$h"',
    '    else _s2k_hostv+=("$h"); fi',
    '  done < "$f"',
    '  _s2k_hostv=("${first:-$me}" "${_s2k_hostv[@]}")',
    "}",
    "_s2k_load_hosts",
    "_s2k_hosts() { printf '%s\\n' \"${_s2k_hostv[@]}\"; }",
    # On Slurm a node's name resolves from every node; a pod's short name does not (the pods' DNS search path
    # lacks the JobSet's subdomain), its hostfile name `<pod>.<trainjob>` does. So in the batch shell
    # `hostname` and $HOSTNAME give that name (what `MASTER_ADDR=$(hostname)` needs); `-s` the short one.
    'if [ "${#_s2k_hostv[@]}" -gt 1 ]; then',
    '  hostname() { case "${1:-}" in "") echo "${_s2k_hostv[0]}" ;; -s|--short) echo "${_s2k_hostv[0]%%.*}" ;;'
    ' -f|--fqdn|--long) echo "${_s2k_hostv[0]}" ;; *) command hostname "$@" ;; esac; }',
    '  HOSTNAME="${_s2k_hostv[0]}"',
    "fi",
]

EXPAND = [
    "_s2k_expand() {  # slurm2kf: a Slurm host list (a,b[1-3],c[01,07]) -> one name per line",
    '  local s="$1" c i depth=0 cur=""',
    "  for ((i = 0; i < ${#s}; i++)); do",
    '    c="${s:i:1}"',
    '    case "$c" in "[") depth=$((depth + 1)) ;; "]") depth=$((depth - 1)) ;; esac',
    '    if [ "$c" = , ] && [ "$depth" -eq 0 ]; then _s2k_expand1 "$cur" || return 1; cur=""; else cur+="$c"; fi',
    "  done",
    '  _s2k_expand1 "$cur"',
    "}",
    "_s2k_expand1() {",
    '  local s="$1" pre inner post part a b k parts',
    '  [ -n "$s" ] || return 0',
    '  if [[ "$s" != *"["*"]"* ]]; then printf \'%s\\n\' "$s"; return 0; fi',
    '  pre="${s%%\\[*}"; inner="${s#*\\[}"; post="${inner#*\\]}"; inner="${inner%%\\]*}"',
    '  IFS=, read -ra parts <<< "$inner"',
    '  for part in "${parts[@]}"; do',
    '    a="${part%%-*}"; b="${part#*-}"',
    '    if ! [[ "$a" =~ ^[0-9]+$ && "$b" =~ ^[0-9]+$ ]]; then',
    '      echo "slurm2kf: invalid host list: $1" >&2; return 1',
    "    fi",
    "    for ((k = 10#$a; k <= 10#$b; k++)); do",
    '      _s2k_expand1 "$pre$(printf \'%0*d\' "${#a}" "$k")$post" || return 1',
    "    done",
    "  done",
    "}",
]

SCONTROL = [
    "scontrol() {  # slurm2kf: only `scontrol show hostname(s) [LIST]` exists on Kubernetes",
    "  local out",
    '  case "${1:-} ${2:-}" in',
    '    "show hostnames"|"show hostname")',
    '      out="$(_s2k_expand "${3:-${SLURM_JOB_NODELIST:-$(IFS=,; echo "${_s2k_hostv[*]}")}}")" || return 1',
    "      # scontrol writes its list at once: a reader that stops early (`| head -n1` under pipefail) is no",
    "      # error; bash writes line by line, so a closed pipe is ignored here",
    "      ( trap '' PIPE; printf '%s\\n' \"$out\" 2>/dev/null ); return 0 ;;",
    '    *) echo "slurm2kf: scontrol $* is not available on Kubernetes (only scontrol show hostnames)" >&2',
    "       return 1 ;;",
    "  esac",
    "}",
]

# Values of the batch step itself (sbatch.1 OUTPUT ENVIRONMENT; env.c env_array_for_batch_job).
_BATCH_VALUES = {
    "SLURM_JOB_NODELIST": '"$(IFS=,; echo "${_s2k_hostv[*]}")"',
    "SLURM_NODELIST": '"$(IFS=,; echo "${_s2k_hostv[*]}")"',
    "SLURMD_NODENAME": '"${_s2k_hostv[0]}"',
    "SLURM_TOPOLOGY_ADDR": '"${_s2k_hostv[0]}"',
    "SLURM_NODEID": "0",
    "SLURM_PROCID": "0",
    "SLURM_LOCALID": "0",
    "SLURM_GTIDS": "0",
}

# ---- srun: options ----------------------------------------------------------------------------

# srun(1) short options that take a value (22.05); every other short option is a flag.
_SHORT_VALUE = "ABcCDdeFGiJLmMnNopqrSTtwWx"

SRUN_OPTS = [
    "_s2k_step_opts() {  # slurm2kf: srun(1)'s options; sets o_* and _s2k_nopt (words taken)",
    "  local a v has key n=0",
    '  o_N="" o_n="" o_tpn="" o_w="" o_x="" o_r="" o_c="" o_D="" o_gpt="" o_gpn="" o_gres="" o_gbind=""',
    '  o_label=0 o_mprog=0 o_K=0 o_export=""',
    "  while [ $# -gt 0 ]; do",
    '    a="$1" v="" has=0',
    '    case "$a" in',
    "      --) n=$((n + 1)); break ;;",
    '      --*=*) v="${a#*=}"; a="${a%%=*}"; has=1 ;;',
    "      --*|-?) ;;",
    f'      -[{_SHORT_VALUE}]*) v="${{a:2}}"; a="${{a:0:2}}"; has=1 ;;',
    '      -K*) v="${a:2}"; a=-K; has=1 ;;',
    '      -*) [[ "$a" == *l* ]] && o_label=1; [[ "$a" == *K* ]] && o_K=1; shift; n=$((n + 1)); continue ;;',
    "      *) break ;;",
    "    esac",
    '    case "$a" in',
    "      -N|--nodes) key=o_N ;; -n|--ntasks) key=o_n ;; --ntasks-per-node) key=o_tpn ;;",
    "      -w|--nodelist) key=o_w ;; -x|--exclude) key=o_x ;; -r|--relative) key=o_r ;;",
    "      -c|--cpus-per-task) key=o_c ;; -D|--chdir) key=o_D ;; --export) key=o_export ;;",
    "      --gpus-per-task) key=o_gpt ;; --gpus-per-node) key=o_gpn ;; --gres) key=o_gres ;;",
    "      --gpu-bind) key=o_gbind ;;",
    '      -l|--label) o_label=1; key="" ;;',
    '      --multi-prog) o_mprog=1; key="" ;;',
    '      -K|--kill-on-bad-exit) o_K=1; [ "$v" = 0 ] && o_K=0; key=""; has=0 ;;',
    f"      -[{_SHORT_VALUE}]|--{prologue._SRUN_VALUE_LONG.replace('|', '|--')}) key=_ ;;",
    "      --ntasks-per-core|--ntasks-per-socket|--ntasks-per-gpu|--gpus-per-socket|--cpus-per-gpu) key=_ ;;",
    '      *) key="" ;;  # flags: --exclusive, --overlap, -u/--unbuffered, --exact, -v, ...',
    "    esac",
    '    if [ -n "$key" ] && [ "$has" = 0 ]; then',
    '      [ $# -ge 2 ] || { echo "srun: error: option $a requires an argument" >&2; return 1; }',
    '      v="$2"; shift; n=$((n + 1))',
    "    fi",
    '    [ -z "$key" ] || [ "$key" = _ ] || printf -v "$key" \'%s\' "$v"',
    "    shift; n=$((n + 1))",
    "  done",
    "  _s2k_nopt=$n",
    "}",
    "_s2k_count() {  # slurm2kf: a count option's value (N, or the max of MIN-MAX); empty when not a count",
    '  local v="${1##*-}"; [ -n "$v" ] || v="${1%%-*}"',
    '  if [[ "$v" =~ ^[0-9]+$ ]]; then echo "$((10#$v))"; fi',
    "}",
]

# ---- srun: the step's nodes and tasks (srun(1); slurm_step_layout.c block distribution) --------

SRUN_LAYOUT = [
    "_s2k_find() {  # slurm2kf: index of a host name (full or short) in the allocation, else nothing",
    "  local i",
    '  for i in "${!_s2k_hostv[@]}"; do',
    '    case "$1" in "${_s2k_hostv[i]}"|"${_s2k_hostv[i]%%.*}") echo "$i"; return 0 ;; esac',
    "  done",
    "  return 1",
    "}",
    "_s2k_step_nodes() {  # slurm2kf: -w/-x/-r -> the pool of node indexes (want: the -w ones first)",
    "  local h i n=${#_s2k_hostv[@]} rel=0 names",
    "  declare -A skip=()",
    "  want=() pool=() named=0",
    '  if [ -n "$o_x" ]; then',
    '    names="$(_s2k_expand "$o_x")" || return 1',
    '    while read -r h; do i="$(_s2k_find "$h")" && skip[$i]=1; done <<< "$names"',
    "  fi",
    '  if [ -n "$o_w" ]; then',
    '    if [[ "$o_w" == */* ]] && [ -f "$o_w" ]; then names="$(tr -s \' ,\' \'\\n\\n\' < "$o_w")"',
    '    else names="$(_s2k_expand "$o_w")" || return 1; fi',
    "    while read -r h; do",
    '      [ -n "$h" ] || continue; named=$((named + 1))',
    '      i="$(_s2k_find "$h")" && [ -z "${skip[$i]:-}" ] && skip[$i]=w',
    '    done <<< "$names"',
    '    for ((i = 0; i < n; i++)); do [ "${skip[$i]:-}" = w ] && want+=("$i"); done',
    '  elif [ -n "$o_r" ]; then',
    '    rel="$(_s2k_count "$o_r")"',
    '    [ -n "$rel" ] && [ "$rel" -lt "$n" ] || {',
    '      echo "srun: error: --relative=$o_r is beyond the $n nodes of the allocation" >&2; return 1; }',
    "  fi",
    '  for ((i = rel; i < n; i++)); do [ -z "${skip[$i]:-}" ] && pool+=("$i"); done',
    "  return 0",
    "}",
    "_s2k_step_layout() {  # slurm2kf: nodes[] (indexes), counts[], ntasks, nnodes of the step",
    "  local ncli tcli tpn avail base extra i",
    "  _s2k_step_nodes || return 1",
    '  ncli="$(_s2k_count "$o_N")"; tcli="$(_s2k_count "$o_n")"',
    '  [ -z "$o_N$o_n" ] || [ -n "$ncli$tcli" ] || { echo "srun: error: invalid task or node count" >&2; return 1; }',
    '  tpn="$(_s2k_count "${o_tpn:-${SLURM_NTASKS_PER_NODE:-$_s2k_job_tpn}}")"',
    '  ntasks="${tcli:-$(_s2k_count "${SLURM_NTASKS:-${SLURM_NPROCS:-$_s2k_job_ntasks}}")}"',
    '  [ -z "$tcli" ] && [ -n "$o_tpn" ] && [ -n "$ncli" ] && ntasks=""  # -N and --ntasks-per-node on srun',
    '  nnodes="${ncli:-$(_s2k_count "${SLURM_NNODES:-${SLURM_JOB_NUM_NODES:-${#_s2k_hostv[@]}}}")}"',
    '  [ -n "$o_w" ] && [ -z "$ncli" ] && nnodes=$(( ${#want[@]} > named ? ${#want[@]} : named ))',
    '  [ -n "$ncli" ] || [ -n "$o_w" ] || [ "$nnodes" -le "${#pool[@]}" ] || nnodes=${#pool[@]}',
    '  if [ -n "$ntasks" ] && [ "$ntasks" -lt "$nnodes" ]; then',
    '    echo "srun: Warning: can\'t run $ntasks processes on $nnodes nodes, setting nnodes to $ntasks" >&2',
    "    nnodes=$ntasks",
    "  fi",
    '  if [ -z "$ntasks" ]; then ntasks=$(( nnodes * ${tpn:-1} ))',
    '  elif [ -n "$tpn" ] && [ "$ntasks" -ne $(( nnodes * tpn )) ]; then  # srun 22.05 opt.c: the count wins',
    "    echo \"srun: Warning: can't honor --ntasks-per-node set to $tpn which doesn't match the requested\" \\",
    '      "tasks $ntasks with the number of requested nodes $nnodes. Ignoring --ntasks-per-node." >&2',
    "  fi",
    '  [ "$ntasks" -ge 1 ] && [ "$nnodes" -ge 1 ] || { echo "srun: error: invalid task or node count" >&2; return 1; }',
    "  avail=$(( ${#want[@]} + ${#pool[@]} ))",
    '  if [ "$nnodes" -gt "$avail" ]; then',
    '    echo "srun: error: Only allocated $avail nodes asked for $nnodes" >&2; return 1',
    "  fi",
    "  _s2k_pick || return 1",
    "  base=$(( ntasks / nnodes )) extra=$(( ntasks % nnodes )) counts=()",
    "  for ((i = 0; i < nnodes; i++)); do counts+=( $(( base + (i < extra ? 1 : 0) )) ); done",
    "}",
    "_s2k_pick() {  # slurm2kf: the step's nodes: those -w names, then the pool's first ones, in allocation order",
    "  local i",
    "  declare -A got=()",
    '  nodes=("${want[@]}")',
    '  for i in "${want[@]}"; do got[$i]=1; done',
    '  if [ "${#want[@]}" -gt "$nnodes" ]; then',
    '    echo "srun: error: Requested node configuration is not available" >&2; return 1',
    "  fi",
    '  for i in "${pool[@]}"; do',
    '    [ "${#nodes[@]}" -lt "$nnodes" ] || break',
    '    [ -z "${got[$i]:-}" ] && nodes+=("$i")',
    "  done",
    "  mapfile -t nodes < <(printf '%s\\n' \"${nodes[@]}\" | sort -n)",
    "}",
]

# ---- srun: the step's environment ---------------------------------------------------------------

SRUN_ENV = [
    "_s2k_next_step() {  # slurm2kf: 0, 1, 2, ... per srun of the job, also for steps started with &",
    '  local d="$_s2k_stepdir" i=0',
    '  [ -r "$d/next" ] && read -r i < "$d/next"; [[ "$i" =~ ^[0-9]+$ ]] || i=0',
    '  while ! ( set -C; : > "$d/$i" ) 2>/dev/null; do [ -e "$d/$i" ] || break; i=$((i + 1)); done',
    '  echo "$((i + 1))" > "$d/next" 2>/dev/null; echo "$i"',
    "}",
    "_s2k_gpu_count() {  # slurm2kf: GPUs in a --gpus-per-node (4, a100:4) or --gres (gpu:a100:4,...) value",
    "  local item v",
    '  IFS=, read -ra _s2k_items <<< "$1"',
    '  for item in "${_s2k_items[@]}"; do',
    '    case "$2:$item" in gres:gpu*|gpn:*) ;; *) continue ;; esac',
    '    v="${item##*:}"; [[ "$v" =~ ^[0-9]+$ ]] && echo "$((10#$v))" || echo 1; return 0',
    "  done",
    "}",
    "_s2k_step_gpus() {  # slurm2kf: _S2K_GPU=mode:arg:gpus of the node for the task wrapper",
    '  local gpt gn mode=keep arg="" b="${o_gbind#verbose,}"',
    '  b="${b%,verbose}"',
    '  gpt="$(_s2k_count "${o_gpt:-${SLURM_GPUS_PER_TASK:-}}")"',
    '  gn="$(_s2k_gpu_count "$o_gpn" gpn)"; [ -n "$gn" ] || gn="$(_s2k_gpu_count "$o_gres" gres)"',
    '  gn="${gn:-$_s2k_gpn}"',
    '  if [ -n "$gpt" ]; then mode=pertask arg=$gpt; elif [ "$gn" -gt 0 ]; then mode=all; fi',
    '  case "$b" in',
    "    ''|quiet) ;;",
    '    closest) [ -n "$gpt" ] || mode=split ;;',
    '    none) [ "$mode" = keep ] || mode=none ;;',
    '    single:*) arg="$(_s2k_count "${b#single:}")"; [ -n "$arg" ] && [ "$arg" -gt 0 ] && mode=single ;;',
    '    per_task:*) arg="$(_s2k_count "${b#per_task:}")"; [ -n "$arg" ] && mode=pertask ;;',
    '    map_gpu:*) arg="${b#map_gpu:}"; [[ "$arg" =~ ^[0-9]+(,[0-9]+)*$ ]] && mode=map ;;',
    '    mask_gpu:*) arg="${b#mask_gpu:}"; [[ "$arg" =~ ^(0[xX])?[0-9a-fA-F]+(,(0[xX])?[0-9a-fA-F]+)*$ ]] && mode=mask ;;',
    '    *) echo "srun: warning: --gpu-bind=$b is not reproduced; each task sees the step\'s GPUs" >&2 ;;',
    "  esac",
    '  [ "$mode" = none ] && arg="$gpt"',
    '  export _S2K_GPU="$mode:$arg:$gn"',
    "}",
    "_s2k_step_env() {  # slurm2kf: the step's layout and options for the task wrapper (_S2K_* variables)",
    '  local i c id names="" cf="" prev="" run=0 item k',
    '  id="$(_s2k_next_step)"',
    '  for i in "${nodes[@]}"; do names+="${names:+,}${_s2k_hostv[i]}"; done',
    '  for c in "${counts[@]}" end; do  # Slurm\'s counts form: 2(x3),1',
    '    if [ "$c" = "$prev" ]; then run=$((run + 1)); continue; fi',
    '    if [ -n "$prev" ]; then cf+="${cf:+,}$prev"; [ "$run" -gt 1 ] && cf+="(x$run)"; fi',
    "    prev=$c run=1",
    "  done",
    '  export _S2K_STEP="$id|$ntasks|$(IFS=,; echo "${counts[*]}")|$cf|$names"',
    '  i=$((ntasks - 1)); [ "$o_label" = 1 ] && export _S2K_LABEL="${#i}"',
    '  c="$(_s2k_count "$o_c")"; [ -n "$c" ] && export _S2K_CPT="$c"',
    '  if [ -n "$o_export" ]; then  # srun(1) --export: ALL, NONE, NAME, NAME=value (without ALL: only those)',
    '    IFS=, read -ra _s2k_items <<< "$o_export"',
    '    export _S2K_KEEP=""',
    '    for item in "${_s2k_items[@]}"; do',
    '      k="${item%%=*}"',
    '      case "$item" in ALL) unset _S2K_KEEP ;; NONE) ;; *)',
    '        [[ "$k" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { echo "srun: error: invalid --export item $item" >&2; return 1; }',
    '        [ "$k" = "$item" ] || export "$k=${item#*=}"',
    '        [ -z "${_S2K_KEEP+x}" ] || _S2K_KEEP+=",$k" ;;',
    "      esac",
    "    done",
    "  fi",
    "  _s2k_step_gpus",
    "}",
]

# ---- srun: starting the tasks -----------------------------------------------------------------

SRUN_RUN = [
    "_s2k_run_local() {  # slurm2kf: every task on the batch pod: N local processes, no MPI",
    "  local r i rc=0 code first=0 pids=()",
    '  [ "$o_K" = 1 ] && set -m  # each task its own process group, so that -K ends its whole tree',
    '  if [ -n "$o_D" ]; then cd -- "$o_D" || { echo "srun: error: cannot chdir to $o_D" >&2; return 1; }; fi',
    "  for ((r = 0; r < ntasks; r++)); do",
    '    if [ "$r" -eq 0 ]; then _S2K_RANK=0 bash -c "$_s2k_task_sh" s2k-task "$@" <&0 &',
    '    else _S2K_RANK=$r bash -c "$_s2k_task_sh" s2k-task "$@" < /dev/null & fi',
    '    pids+=("$!")',
    "  done",
    '  if [ "$o_K" = 1 ]; then  # --kill-on-bad-exit: the first failing task ends the others',
    "    exec 2>/dev/null  # (the tasks keep their stderr; job control would report the ones it ends)",
    '    for r in "${pids[@]}"; do',
    "      wait -n; code=$?",
    '      if [ "$code" -ne 0 ] && [ "$first" -eq 0 ]; then',
    '        first=$code; for i in "${pids[@]}"; do kill -TERM -- "-$i" 2>/dev/null; done',
    "      fi",
    "    done",
    "    return $first",
    "  fi",
    '  for r in "${pids[@]}"; do wait "$r"; code=$?; [ "$code" -gt "$rc" ] && rc=$code; done',
    "  return $rc",
    "}",
    "_s2k_run_mpi() {  # slurm2kf: tasks on other pods: Open MPI's mpirun over the Trainer's ssh",
    '  local i v rc hl="" xs=() abort=0 f="$_s2k_stepdir/rc.$BASHPID"',
    '  for i in "${!nodes[@]}"; do hl+="${hl:+,}${_s2k_hostv[nodes[i]]}:${counts[i]}"; done',
    "  # without -K every task reports its exit status (mpirun then returns 0 whatever they exit with)",
    '  [ "$o_K" = 1 ] && abort=1 || export _S2K_REPORT=1',
    "  while read -r v; do  # srun --export=ALL: the batch shell's exported variables",
    '    case "$v" in HOSTNAME|PWD|OLDPWD|SHLVL|_|TMPDIR|_S2K_TMP|_S2K_SHIMS|BASH_FUNC_*|OMPI_*|PRTE_*|PMIX_*) continue ;; esac',
    '    if [ -n "${_S2K_KEEP+x}" ]; then',
    '      case "$v" in SLURM_*|_S2K_*) ;; *) case ",$_S2K_KEEP," in *",$v,"*) ;; *) continue ;; esac ;; esac',
    "    fi",
    '    xs+=(-x "$v")',
    "  done < <(compgen -e)",
    "  unset OMPI_MCA_orte_default_hostfile OMPI_MCA_rmaps_base_default_hostfile PRTE_MCA_prte_default_hostfile",
    "  # each step's mpirun its own TMPDIR (its session directory): two mpiruns started at once (background",
    '  # steps) race to create a shared one and Open MPI 4 fails the loser (session_dir.c: mkdir "File exists").',
    "  # The tasks get the batch shell's TMPDIR back (_S2K_TMP); the daemons on the other pods keep their own.",
    '  local sdir="$_s2k_stepdir/mpi.$BASHPID"; mkdir -p "$sdir"',
    '  _S2K_TMP="${TMPDIR+set:$TMPDIR}"; export _S2K_TMP; xs+=(-x _S2K_TMP)',
    '  [ -z "${_s2k_shims:-}" ] || { _S2K_SHIMS="$_s2k_shims"; export _S2K_SHIMS; xs+=(-x _S2K_SHIMS); }',
    '  { TMPDIR="$sdir" OMPI_MCA_plm_rsh_args="$_s2k_ssh" PRTE_MCA_plm_ssh_args="$_s2k_ssh" \\',
    "    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_orte_abort_on_non_zero_status=$abort \\",
    '    mpirun --host "$hl" -np "$ntasks" --map-by slot "${xs[@]}" --wdir "${o_D:-$PWD}" \\',
    '    bash -c "$_s2k_task_sh" s2k-task "$@" 2>&1 1>&3 3>&- | _s2k_exits "$f"; } 3>&1',
    "  rc=${PIPESTATUS[0]}",
    '  read -r i < "$f" 2>/dev/null',
    '  [[ "$i" =~ ^[0-9]+$ ]] && [ "$i" -gt "$rc" ] && rc=$i',
    "  return $rc",
    "}",
    "_s2k_exits() {  # slurm2kf: mpirun's stderr without the tasks' exit reports; the highest code -> $1",
    "  local l c max=0 m=$'\\037slurm2kf-exit '",
    '  while IFS= read -r l || [ -n "$l" ]; do',
    '    if [[ "$l" == *"$m"* ]]; then',
    '      c="${l##*"$m"}"; c="${c%%$\'\\037\'*}"; l="${l%%"$m"*}"',
    '      [[ "$c" =~ ^[0-9]+$ ]] && [ "$c" -gt "$max" ] && max=$c',
    '      [ -n "$l" ] || continue',
    "    fi",
    "    printf '%s\\n' \"$l\" >&2",
    "  done",
    '  echo "$max" > "$1"',
    "}",
    "srun() (  # slurm2kf: one Slurm job step started from the batch pod (docs/batch-mode.md)",
    "  { set +x; } 2>/dev/null; set +e +u +o pipefail",
    '  _s2k_step_opts "$@" || exit 1',
    '  shift "$_s2k_nopt"',
    '  if [ "$o_mprog" = 1 ]; then  # --multi-prog CONF: the program of each task comes from CONF',
    '    [ $# -ge 1 ] && [ -r "$1" ] || { echo "srun: error: --multi-prog: cannot read ${1:-its file}" >&2; exit 1; }',
    '    _S2K_MPROG="$(cat -- "$1")"; export _S2K_MPROG; set -- true',
    "  fi",
    '  [ $# -gt 0 ] || { echo "srun: fatal: No command given to execute." >&2; exit 1; }',
    "  _s2k_step_layout || exit 1",
    "  _s2k_step_env || exit 1",
    '  if [ "${#nodes[@]}" -eq 1 ] && [ "${nodes[0]}" -eq 0 ]; then _s2k_run_local "$@"; else _s2k_run_mpi "$@"; fi',
    ")",
]

# ---- the task wrapper (`bash -c WRAPPER s2k-task CMD ARGS...`, once per task) ------------------

TASK_WRAPPER = r"""if [ -n "${_S2K_TMP+x}" ]; then  # started by mpirun: the batch shell's TMPDIR, not mpirun's own
  case "$_S2K_TMP" in set:*) export TMPDIR="${_S2K_TMP#set:}" ;; *) unset TMPDIR ;; esac; unset _S2K_TMP
fi
[ -z "${_S2K_SHIMS:-}" ] || eval "$_S2K_SHIMS"  # container wrappers on this pod too (launchers/container.py)
unset _S2K_SHIMS
_s2k_r="${_S2K_RANK:-${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}}"
IFS='|' read -r _s2k_id _s2k_n _s2k_c _s2k_cf _s2k_nl <<< "$_S2K_STEP"
IFS=, read -ra _s2k_cv <<< "$_s2k_c"
IFS=, read -ra _s2k_nv <<< "$_s2k_nl"
_s2k_nid=0 _s2k_first=0
while [ $((_s2k_nid + 1)) -lt "${#_s2k_cv[@]}" ] && [ $((_s2k_first + _s2k_cv[_s2k_nid])) -le "$_s2k_r" ]; do
  _s2k_first=$((_s2k_first + _s2k_cv[_s2k_nid])); _s2k_nid=$((_s2k_nid + 1))
done
_s2k_cnt=${_s2k_cv[_s2k_nid]} _s2k_l=$((_s2k_r - _s2k_first)) _s2k_gt=""
for ((_s2k_i = _s2k_first; _s2k_i < _s2k_first + _s2k_cnt; _s2k_i++)); do _s2k_gt+="${_s2k_gt:+,}$_s2k_i"; done
if [ -n "${_S2K_KEEP+x}" ]; then
  while read -r _s2k_v; do
    case "$_s2k_v" in SLURM_*|_S2K_*) ;; *) case ",$_S2K_KEEP," in *",$_s2k_v,"*) ;; *) unset "$_s2k_v" ;; esac ;; esac
  done < <(compgen -e)
fi
export SLURM_PROCID="$_s2k_r" SLURM_LOCALID="$_s2k_l" SLURM_NODEID="$_s2k_nid" SLURM_GTIDS="$_s2k_gt" \
  SLURM_STEP_ID="$_s2k_id" SLURM_STEPID="$_s2k_id" SLURM_STEP_NUM_TASKS="$_s2k_n" SLURM_NTASKS="$_s2k_n" \
  SLURM_NPROCS="$_s2k_n" SLURM_STEP_NUM_NODES="${#_s2k_nv[@]}" SLURM_NNODES="${#_s2k_nv[@]}" \
  SLURM_STEP_NODELIST="$_s2k_nl" SLURM_NODELIST="$_s2k_nl" SLURM_STEP_TASKS_PER_NODE="$_s2k_cf" \
  SLURM_TASKS_PER_NODE="$_s2k_cf" SLURMD_NODENAME="${_s2k_nv[_s2k_nid]}" SLURM_TOPOLOGY_ADDR="${_s2k_nv[_s2k_nid]}" \
  SLURM_TASK_PID="$$" SLURM_DISTRIBUTION=block
[ -z "${_S2K_CPT:-}" ] || export SLURM_CPUS_PER_TASK="$_S2K_CPT"
IFS=: read -r _s2k_gm _s2k_ga _s2k_gn <<< "${_S2K_GPU:-keep::0}"
_s2k_dev="" _s2k_per=0
case "$_s2k_gm" in
  pertask) _s2k_per=$_s2k_ga _s2k_i0=$((_s2k_l * _s2k_ga)) ;;
  all) _s2k_per=$_s2k_gn _s2k_i0=0 ;;
  none) [ -z "$_s2k_ga" ] || _s2k_gn=$((_s2k_cnt * _s2k_ga)); _s2k_per=$_s2k_gn _s2k_i0=0 ;;
  single) _s2k_dev=$((_s2k_l / _s2k_ga)) ;;
  split) _s2k_per=$((_s2k_gn / _s2k_cnt)) _s2k_i0=$((_s2k_l * (_s2k_gn / _s2k_cnt)))
    [ "$_s2k_per" -gt 0 ] || [ "$_s2k_gn" -eq 0 ] || _s2k_dev=$((_s2k_l % _s2k_gn)) ;;
  map) IFS=, read -ra _s2k_m <<< "$_s2k_ga"; _s2k_dev=${_s2k_m[_s2k_l % ${#_s2k_m[@]}]} ;;
  mask) IFS=, read -ra _s2k_m <<< "$_s2k_ga"; _s2k_v=${_s2k_m[_s2k_l % ${#_s2k_m[@]}]}
    _s2k_v=$((16#${_s2k_v#0[xX]})) _s2k_i=0
    while [ "$_s2k_v" -gt 0 ]; do
      [ $((_s2k_v & 1)) -eq 0 ] || _s2k_dev+="${_s2k_dev:+,}$_s2k_i"; _s2k_v=$((_s2k_v >> 1)) _s2k_i=$((_s2k_i + 1))
    done ;;
esac
for ((_s2k_i = 0; _s2k_i < _s2k_per; _s2k_i++)); do _s2k_dev+="${_s2k_dev:+,}$((_s2k_i0 + _s2k_i))"; done
if [ "$_s2k_gm" != keep ]; then
  if [ -n "$_s2k_dev" ]; then
    export CUDA_VISIBLE_DEVICES="$_s2k_dev" GPU_DEVICE_ORDINAL="$_s2k_dev" SLURM_STEP_GPUS="$_s2k_dev"
  else unset CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL SLURM_STEP_GPUS; fi
fi
_s2k_inranks() {
  local p a b off=0
  [ "$1" = "*" ] && { echo "$2"; return 0; }
  IFS=, read -ra _s2k_ps <<< "$1"
  for p in "${_s2k_ps[@]}"; do
    a="${p%%-*}" b="${p#*-}"
    [[ "$a" =~ ^[0-9]+$ && "$b" =~ ^[0-9]+$ ]] || return 1
    if [ "$2" -ge "$((10#$a))" ] && [ "$2" -le "$((10#$b))" ]; then echo $((off + $2 - 10#$a)); return 0; fi
    off=$((off + 10#$b - 10#$a + 1))
  done
  return 1
}
_s2k_words() {
  local s="$1" c i w="" q="" any=0
  _s2k_w=()
  for ((i = 0; i < ${#s}; i++)); do
    c="${s:i:1}"
    if [ -n "$q" ]; then if [ "$c" = "$q" ]; then q=""; else w+="$c"; fi
    elif [ "$c" = "'" ] || [ "$c" = '"' ]; then q="$c" any=1
    elif [[ "$c" == [[:space:]] ]]; then [ -z "$w" ] && [ "$any" = 0 ] || _s2k_w+=("$w"); w="" any=0
    else w+="$c"; fi
  done
  [ -z "$w" ] && [ "$any" = 0 ] || _s2k_w+=("$w")
}
if [ -n "${_S2K_MPROG+x}" ]; then
  _s2k_found=0
  while IFS= read -r _s2k_line || [ -n "$_s2k_line" ]; do
    _s2k_line="${_s2k_line#"${_s2k_line%%[![:space:]]*}"}"
    case "$_s2k_line" in ""|"#"*) continue ;; esac
    _s2k_spec="${_s2k_line%%[[:space:]]*}"
    _s2k_off="$(_s2k_inranks "$_s2k_spec" "$_s2k_r")" || continue
    _s2k_rest="${_s2k_line:${#_s2k_spec}}"; _s2k_rest="${_s2k_rest//%t/$_s2k_r}"
    _s2k_words "${_s2k_rest//%o/$_s2k_off}"; set -- "${_s2k_w[@]}"; _s2k_found=1; break
  done <<< "$_S2K_MPROG"
  [ "$_s2k_found" = 1 ] && [ $# -gt 0 ] || { echo "srun: error: no program for task $_s2k_r in --multi-prog" >&2; exit 1; }
fi
_s2k_lw="${_S2K_LABEL:-}" _s2k_rep="${_S2K_REPORT:-}"
unset _S2K_RANK _S2K_STEP _S2K_GPU _S2K_KEEP _S2K_LABEL _S2K_MPROG _S2K_CPT _S2K_REPORT
# a program that is not there ends as bash ends it (127, "command not found"), through bash's own lookup
_s2k_exec() { command -v -- "$1" >/dev/null 2>&1 || { "$@"; exit; }; exec "$@"; }
[ -n "$_s2k_lw$_s2k_rep" ] || _s2k_exec "$@"
_s2k_lab() { local l; while IFS= read -r l || [ -n "$l" ]; do printf '%*s: %s\n' "$_s2k_lw" "$_s2k_r" "$l"; done; }
_s2k_task() {
  if [ -z "$_s2k_lw" ]; then _s2k_exec "$@"; fi
  { "$@" 2>&1 1>&3 3>&- | _s2k_lab >&2; exit "${PIPESTATUS[0]}"; } 3>&1 | _s2k_lab
  exit "${PIPESTATUS[0]}"
}
_s2k_task "$@" <&0 &
_s2k_child=$!
trap 'kill -TERM "$_s2k_child" 2>/dev/null' TERM INT HUP
while :; do wait "$_s2k_child"; _s2k_code=$?; kill -0 "$_s2k_child" 2>/dev/null || break; done
[ -z "$_s2k_rep" ] || printf '\037slurm2kf-exit %s\037\n' "$_s2k_code" >&2
exit "$_s2k_code"
"""


# Open MPI in the batch script (srun's steps and the script's own mpirun) starts its daemons over the
# Trainer's ssh (port 2222 on the pods, keys mounted by the Trainer), never through Slurm's own launcher,
# which the SLURM_* variables of the batch step would otherwise select (Open MPI's plm/ras "slurm" components
# activate on SLURM_JOBID and then start the daemons with a real `srun`, which a pod does not have).
MPI_ENV = [
    "export OMPI_MCA_plm='^slurm' OMPI_MCA_ras='^slurm' PRTE_MCA_plm='^slurm' PRTE_MCA_ras='^slurm'",
    f"export OMPI_MCA_plm_rsh_args={shlex.quote(SSH_ARGS)} PRTE_MCA_plm_ssh_args={shlex.quote(SSH_ARGS)}",
    "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
]


def _job_defaults(job, shape) -> list[str]:
    """The job's own values srun falls back to when the batch environment lacks them (srun(1) INPUT
    ENVIRONMENT: SLURM_NTASKS, SLURM_NTASKS_PER_NODE), the node's GPUs, the step directory."""
    f = job.fields
    ntasks = str(shape.total_tasks) if shape.tasks_given else ""
    tpn = str(f.ntasks_per_node) if f.ntasks_per_node else ""
    return [
        f"_s2k_job_ntasks={shlex.quote(ntasks)} _s2k_job_tpn={shlex.quote(tpn)} _s2k_gpn={int(shape.gpus_per_node or 0)}",
        f"_s2k_ssh={shlex.quote(SSH_ARGS)}",
        '_s2k_stepdir="$(mktemp -d "${TMPDIR:-/tmp}/slurm2kf-steps.XXXXXX" 2>/dev/null)" || {',
        '  _s2k_stepdir="${TMPDIR:-/tmp}/slurm2kf-steps.$$"; mkdir -p "$_s2k_stepdir"; }',
        f"_s2k_task_sh={shlex.quote(TASK_WRAPPER)}",
    ]


def _batch_definition(name: str, job, shape) -> str | None:
    """Shell source for `name` in the batch step, or None when Slurm leaves it unset there."""
    if name in _BATCH_VALUES:
        return _BATCH_VALUES[name]
    if name == "SLURM_ARRAY_JOB_ID" and getattr(job.fields, "array", None):
        # an array's job id is the first task's, as the TrainJob's own SLURM_JOB_ID stand-in (the index is
        # SLURM_ARRAY_TASK_ID, which the TrainJob's env carries)
        return shlex.quote(prologue.job_id_number(job))
    if name.startswith("SLURM_STEP") or prologue.from_env(name):  # no step variables in the batch step
        return None
    return prologue.definition(name, job, shape)


def batch_prologue_lines(job, shape, *, names: Sequence[str], functions: Sequence[str]) -> list[str]:
    """Bash lines run once at the top of the batch script on the batch pod: the allocation's hosts
    (`_s2k_hostv`, `_s2k_hosts`), the batch step's Slurm variables in `names` (exported), and the
    functions in `functions` ("srun", "scontrol", "sbatch")."""
    wanted = set(functions)
    lines = ["# slurm2kf: Slurm batch step on the batch pod (the script runs once; srun starts job steps)"]
    lines += HOSTS
    lines += MPI_ENV
    for name in names:
        if not name.isidentifier() or not name.isascii():
            continue
        expr = _batch_definition(name, job, shape)
        if expr is not None:
            lines.append(f"export {name}={expr}")
    if wanted & {"srun", "scontrol"}:
        lines += EXPAND
    if "scontrol" in wanted:
        lines += SCONTROL
    if "srun" in wanted:
        lines += _job_defaults(job, shape)
        lines += SRUN_OPTS + SRUN_LAYOUT + SRUN_ENV + SRUN_RUN
    if "sbatch" in wanted:
        lines += prologue.SBATCH_FUNCTION
    if "srun" in wanted:
        lines += COMMANDS
    return lines


# `timeout 23h srun …`, `nohup srun …`, `xargs … srun`: a program that runs srun cannot call a bash function, so
# srun and scontrol are also executables (first on PATH; in the batch shell the functions still win) that load
# the batch shell's definitions (its _s2k_* values, one step counter) and call the function.
COMMANDS = [
    '_s2k_cbin="$_s2k_stepdir/bin"; mkdir -p "$_s2k_cbin"',
    "{ declare -p $(compgen -v _s2k_) | sed -e 's/^declare -- /declare -g /' -e 's/^declare -\\([a-zA-Z]*\\) /declare -g\\1 /'",
    '  declare -f; } > "$_s2k_cbin/.batch-step" 2>/dev/null',
    "for _s2k_c in srun scontrol; do",
    '  printf \'#!/bin/bash\\nbuiltin source %q\\n%s "$@"\\n\' "$_s2k_cbin/.batch-step" "$_s2k_c" > "$_s2k_cbin/$_s2k_c"',
    '  chmod +x "$_s2k_cbin/$_s2k_c"',
    "done",
    'export PATH="$_s2k_cbin:$PATH"',
]
