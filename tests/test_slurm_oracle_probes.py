"""Edge cases of sbatch option handling, each checked against real Slurm 22.05 (the oracle).

Short scripts, one rule each (getopt abbreviation and argument forms, value grammars and their
refusals, merging rules, GPU request checks, #PBS/#BSUB translation, SBATCH_* environment and
command-line precedence). They are written to a temporary directory, read by real sbatch through
the oracle's resolve.py and by `slurm2kf inspect --json`, and scored with the oracle's compare.py:
every job field and option must agree and every refusal must agree. Expected values therefore come
from Slurm itself at test time. The oracle must be running; otherwise these tests FAIL.

Not included, on purpose (documented in README/report): GRES names the oracle cluster lacks
(`--gres=nvme:1` is refused there but valid on a site that defines it), `--uid`/`--gid` names
(valid only if the user exists on the submit host), and GRES counts with k/m/g suffixes (compare.py reads `2k` as text).
"""

from __future__ import annotations

import pytest

import oracles

pytestmark = pytest.mark.slurm

# name -> directive/script lines after the shebang (a `srun hostname` line is appended)
PROBES = {
    # getopt
    "abbrev_partition": ["#SBATCH --part=cpu"],
    "abbrev_tasks_alias": ["#SBATCH --tasks=14"],
    "ambiguous_mem_per": ["#SBATCH --mem-per=4G"],
    "ambiguous_excl": ["#SBATCH --excl"],
    "value_next_line": ["#SBATCH --nodes", "#SBATCH 2"],
    "glued_flags": ["#SBATCH -HOsN2"],
    "exclusive_space_user": ["#SBATCH --exclusive user"],
    "requeue_with_value": ["#SBATCH --requeue=expedite"],
    "missing_argument_end": ["#SBATCH -N 1 --time"],
    "pyxis_option": ["#SBATCH --container-image=nvcr.io/x"],
    "empty_word_then_option": ['#SBATCH -J ""', "#SBATCH -t 10"],
    # values
    "time_forms_ms": ["#SBATCH -t 2:30"],
    "time_day_hour": ["#SBATCH -t 1-12"],
    "time_zero": ["#SBATCH -t 0"],
    "time_ten_seconds": ["#SBATCH -t 00:00:10"],
    "time_day_dash": ["#SBATCH -t 1-"],
    "time_infinite": ["#SBATCH -t INFINITE"],
    "time_minus_one": ["#SBATCH -t -1"],
    "time_four_fields": ["#SBATCH -t 1:2:3:4"],
    "time_colon_dash": ["#SBATCH -t 1:-2"],
    "time_decimal": ["#SBATCH -t 10.5"],
    "time_hms_round": ["#SBATCH --time=1:2:3"],
    "mem_decimal": ["#SBATCH --mem=1.5G"],
    "mem_kib_exact": ["#SBATCH --mem=1024K"],
    "mem_kib_round_up": ["#SBATCH --mem=1025K"],
    "mem_gb": ["#SBATCH --mem=2gb"],
    "mem_tb": ["#SBATCH --mem=1T"],
    "mem_negative": ["#SBATCH --mem=-5"],
    "mem_gib_suffix": ["#SBATCH --mem=10GiB"],
    "mem_mb": ["#SBATCH --mem=100MB"],
    "mem_plus": ["#SBATCH --mem=+10"],
    "mem_per_cpu_zero": ["#SBATCH --mem-per-cpu=0"],
    "nodes_kilo": ["#SBATCH -N 1k"],
    "nodes_reversed": ["#SBATCH -N 2-1"],
    "nodes_size_list": ["#SBATCH -N 1,2,4"],
    "nodes_zero": ["#SBATCH -N 0"],
    "nodes_open_max": ["#SBATCH -N 2-"],
    "nodes_open_min": ["#SBATCH -N -3"],
    "nodes_step": ["#SBATCH -N 1-4:2"],
    "nodes_last_wins": ["#SBATCH -N2 -N3"],
    "ntasks_zero": ["#SBATCH -n 0"],
    "ntasks_suffix": ["#SBATCH -n 1k"],
    "cpus_decimal": ["#SBATCH -c 2.5"],
    "array_brackets": ["#SBATCH --array=[1-5]"],
    "array_max": ["#SBATCH --array=0-1000"],
    "array_over_max": ["#SBATCH --array=0-1001"],
    "array_step_zero": ["#SBATCH --array=1-10:0"],
    "array_list_throttle": ["#SBATCH --array=1,3,5%1"],
    "array_step_throttle": ["#SBATCH --array=0-15:4%2"],
    "signal_plain": ["#SBATCH --signal=USR1"],
    "signal_r": ["#SBATCH --signal=R:USR1@30"],
    "signal_bogus": ["#SBATCH --signal=BOGUS"],
    "signal_bad_time": ["#SBATCH --signal=B:10@abc"],
    "signal_sig_prefix": ["#SBATCH --signal=SIGUSR2@100"],
    "signal_rb": ["#SBATCH --signal=RB:USR1"],
    "signal_wraps": ["#SBATCH --signal=70000"],
    "signal_zero": ["#SBATCH --signal=0"],
    "gpus_typed": ["#SBATCH --gpus=a100:2"],
    "gpus_type_only": ["#SBATCH --gpus=a100"],
    "gpus_zero": ["#SBATCH --gpus=0"],
    "gpus_three_fields": ["#SBATCH --gpus=x:y:2"],
    "gpus_mixed": ["#SBATCH --gpus=2,a100:1"],
    "gres_bare": ["#SBATCH --gres=gpu"],
    "gres_type_only": ["#SBATCH --gres=gpu:a100"],
    "gres_none": ["#SBATCH --gres=none"],
    "gres_prefix": ["#SBATCH --gres=gres/gpu:2"],
    "gres_mixed_typed": ["#SBATCH --gres=gpu:a100:2,gpu:1"],
    "gres_bad_count": ["#SBATCH --gres=gpu:a100:x"],
    "gres_two_typed": ["#SBATCH --gres=gpu:a100:2,gpu:a100:1"],
    "gres_last_wins": ["#SBATCH --gres=gpu:a100:2 --gres=gpu:1"],
    "gpus_per_node_two_types": ["#SBATCH --gpus-per-node=a100:2,v100:1"],
    "open_mode_truncate": ["#SBATCH --open-mode=truncate"],
    "open_mode_first_letter": ["#SBATCH --open-mode=Apples"],
    "open_mode_bad": ["#SBATCH --open-mode=foo"],
    "mail_all": ["#SBATCH --mail-type=ALL"],
    "mail_bad": ["#SBATCH --mail-type=bogus"],
    "mail_accumulates": ["#SBATCH --mail-type=begin", "#SBATCH --mail-type=end"],
    "mail_none_then_end": ["#SBATCH --mail-type=NONE", "#SBATCH --mail-type=END"],
    "mail_time_limits": ["#SBATCH --mail-type=TIME_LIMIT_80,ARRAY_TASKS"],
    "exclusive_user": ["#SBATCH --exclusive=user"],
    "exclusive_mcs": ["#SBATCH --exclusive=mcs"],
    "exclusive_topo": ["#SBATCH --exclusive=topo"],
    "exclusive_empty": ["#SBATCH --exclusive="],
    "no_kill_off": ["#SBATCH --no-kill=off"],
    "no_kill_on": ["#SBATCH --no-kill=on"],
    "nice_bare": ["#SBATCH --nice"],
    "nice_text": ["#SBATCH --nice=abc"],
    "kill_on_invalid_dep_case": ["#SBATCH --kill-on-invalid-dep=YES"],
    "wait_all_nodes_bad": ["#SBATCH --wait-all-nodes=2"],
    "hint_bad": ["#SBATCH --hint=foo"],
    "distribution_bad": ["#SBATCH --distribution=foo"],
    "extra_node_info_bad": ["#SBATCH -B 2:x"],
    "extra_node_info_overrides": ["#SBATCH --cores-per-socket=2 -B 2:4:1"],
    "dependency_list": ["#SBATCH --dependency=afterok:1:2,afterany:3"],
    "dependency_bad_type": ["#SBATCH --dependency=foo:1"],
    "chdir_relative": ["#SBATCH -D rel/dir"],
    "export_vars": ["#SBATCH --export=ALL,FOO=bar"],
    "throttle_zero": ["#SBATCH --array=1-3%0"],
    "arbitrary_without_nodelist": ["#SBATCH --distribution=arbitrary"],
    "arbitrary_with_nodelist": ["#SBATCH --distribution=arbitrary -w gpu[01-02]"],
    "plane_too_few_tasks": ["#SBATCH --distribution=plane=4 -N 2 -n 2"],
    "plane_enough_tasks": ["#SBATCH --distribution=plane=4 -N 2 -n 8"],
    "plane_alone": ["#SBATCH -m plane=2"],
    "deadline_before_begin": ["#SBATCH --begin=now+2days --deadline=now+1day"],
    # a bare `now` (no offset) on either side: sbatch compares the two times (opt.c: deadline < begin refuses)
    "begin_now_deadline_later": ["#SBATCH --begin=now --deadline=now+1hour"],
    "deadline_now_before_begin": ["#SBATCH --begin=now+2hours --deadline=now"],
    "distribution_levels": ["#SBATCH --distribution=block:cyclic:fcyclic"],
    "distribution_pack": ["#SBATCH --distribution=block,pack"],
    "distribution_star": ["#SBATCH --distribution=*:block"],
    "gpus_tasks_differ_from_n": ["#SBATCH --gpus-per-task=2 -n 3 --gpus=4"],
    "gpus_tasks_match_n": ["#SBATCH --gpus-per-task=2 -n 3 --gpus=6"],
    "gpus_per_socket_over_node": ["#SBATCH --gpus-per-socket=2 --gpus-per-node=1 --sockets-per-node=2"],
    "ntasks_per_gpu_with_n": ["#SBATCH --ntasks-per-gpu=2 --gres=gpu:2 -n 8"],
    "ntasks_per_gpu_job_gpus": ["#SBATCH --ntasks-per-gpu=2 --gpus=3 -n 8"],
    "ntasks_per_gpu_per_node": ["#SBATCH --ntasks-per-gpu=2 --gpus-per-node=2 -N 2 -n 100"],
    "per_node_per_task_vs_tpn": ["#SBATCH --gpus-per-node=4 --gpus-per-task=2 --ntasks-per-node=4"],
    "per_node_per_task_match": ["#SBATCH --gpus-per-node=4 -N 2 --gpus-per-task=1 --ntasks-per-node=4"],
    "gpus_not_multiple_no_nodes": ["#SBATCH --gpus=3 --gpus-per-node=2"],
    "gpus_per_task_single_node_count": ["#SBATCH --gpus-per-task=1 -N 2"],
    "gpus_per_task_node_range": ["#SBATCH --gpus-per-task=1 --nodes=1-3"],
    "gpus_per_task_per_node_only": ["#SBATCH --gpus-per-node=2 --gpus-per-task=1"],
    "per_node_not_multiple_per_task": ["#SBATCH --gpus-per-task=3 --gpus-per-node=4 -n 2"],
    "typed_gres_untyped_per_node": ["#SBATCH --gres=gpu:a100:2 --gpus-per-node=2"],
    "untyped_gres_typed_per_node": ["#SBATCH --gres=gpu:2 --gpus-per-node=a100:2"],
    "typed_gpus_untyped_per_task": ["#SBATCH --gpus=a100:2 --gpus-per-task=1 -n 2"],
    "two_types_across_options": ["#SBATCH --gres=gpu:a100:2 --gpus-per-node=v100:2"],
    "same_type_across_options": ["#SBATCH --gres=gpu:a100:2 --gpus-per-node=a100:2"],
    "untyped_everywhere": ["#SBATCH --gpus=2 --gpus-per-task=1 -n 2"],
    "mail_all_none": ["#SBATCH --mail-type=ALL,NONE"],
    "mail_none_bogus": ["#SBATCH --mail-type=NONE,bogus"],
    "mail_end_then_none": ["#SBATCH --mail-type=END --mail-type=NONE"],
    "array_throttle_then_index": ["#SBATCH --array=1-3:2%1,5"],
    "ntasks_wraps": ["#SBATCH --ntasks=99999999999"],
    "signal_time_max": ["#SBATCH --signal=B:USR1@65535"],
    "signal_time_over": ["#SBATCH --signal=B:USR1@65536"],
    "realistic_single_gpu": [
        "#SBATCH --nodes=1 --ntasks=1 --cpus-per-task=8 --mem=0 --gres=gpu:1 --partition=gpu --time=23:59:59"
    ],
    "realistic_multi_node": ["#SBATCH --ntasks-per-node 8 --nodes 2 --gpus-per-node a100:8"],
    "gpus_layout_tasks": ["#SBATCH --gpus=8 --gpus-per-node=4 -N 2 --ntasks-per-node=4"],
    "more_nodes_than_tasks": ["#SBATCH -n 4 -N 8"],
    "array_element_dependency": ["#SBATCH --dependency=afterok:1001_2"],
    "empty_values_kept": ["#SBATCH --account= --comment= --job-name= --qos= --mail-user= --export="],
    "empty_values_dropped": ["#SBATCH --array= --constraint= --dependency= --gpus= --gpus-per-node="],
    "empty_gres": ["#SBATCH --gres="],
    "empty_output": ["#SBATCH --output= --error="],
    "empty_partition": ["#SBATCH --partition="],
    "empty_exclusive_nice": ["#SBATCH --exclusive= --nice="],
    "empty_time": ["#SBATCH --time="],
    "empty_nodes": ["#SBATCH --nodes="],
    "empty_mem": ["#SBATCH --mem="],
    "empty_mail_type": ["#SBATCH --mail-type="],
    "empty_signal": ["#SBATCH --signal="],
    "array_trailing_comma": ["#SBATCH --array=1-5,"],
    "dependency_bare_id": ["#SBATCH --dependency=123"],
    "time_trailing_colon": ["#SBATCH --time=1:"],
    "time_dash_colon": ["#SBATCH --time=1-:30"],
    "time_double_colon": ["#SBATCH --time=1::0"],
    "time_zero_zero": ["#SBATCH --time=0:0"],
    "time_negative_days": ["#SBATCH --time=-5"],
    "time_minus_zero": ["#SBATCH --time=-0"],
    "time_one_second": ["#SBATCH --time=0-0:0:1"],
    "tasks_cap_nodes": ["#SBATCH -N 4 -n 2"],
    "tasks_cap_node_range": ["#SBATCH -N 2-4 -n 3"],
    "tasks_below_nodes": ["#SBATCH -N 2-3 -n 1"],
    "gpu_layout_too_few_nodes": ["#SBATCH -N 1 --gpus=4 --gpus-per-node=2"],
    "gpu_layout_in_range": ["#SBATCH -N 1-4 --gpus=4 --gpus-per-node=2"],
    "gpu_layout_too_many_nodes": ["#SBATCH -N 3 --gpus=4 --gpus-per-node=2"],
    "gpu_layout_after_task_cap": ["#SBATCH -N 2 -n 1 --gpus=4 --gpus-per-node=2"],
    # less common options: sbatch's rendering and its own checks
    "flags_and_propagate": ["#SBATCH --propagate --contiguous --spread-job --use-min-nodes --overcommit"],
    "delay_profile_power_cpufreq": ["#SBATCH --delay-boot=90 --profile=task,energy --power=level --cpu-freq=high"],
    "switches_binds": [
        "#SBATCH --switches=2@10:00 --distribution=cyclic:block --hint=nomultithread "
        "--gpu-bind=closest --mem-bind=local"
    ],
    "placement_lists": ["#SBATCH --tmp=10G --mincpus=4 --network=x --licenses=a:2 -w gpu[01-02] -x gpu03"],
    "accounting_misc": ["#SBATCH --acctg-freq=30 --get-user-env=10L --priority=5 --wckey=w --mcs-label=m"],
    "profile_all": ["#SBATCH --profile=all"],
    "profile_bad": ["#SBATCH --profile=bogus"],
    "cpu_freq_bad": ["#SBATCH --cpu-freq=bogus"],
    "delay_boot_zero": ["#SBATCH --delay-boot=0"],
    "mem_bind_bad": ["#SBATCH --mem-bind=bogus"],
    "gpu_bind_bad": ["#SBATCH --gpu-bind=bogus"],
    "acctg_freq_bad": ["#SBATCH --acctg-freq=bogus"],
    "switches_bad": ["#SBATCH --switches=x"],
    "power_ignored": ["#SBATCH --power=bogus"],
    "begin_deadline": ["#SBATCH --begin=now+1hour --deadline=now+2days"],
    "begin_bad": ["#SBATCH --begin=bogus"],
    "files_propagate": ["#SBATCH -i in.txt -e err.txt --propagate=STACK"],
    # options sbatch reads only from its command line (first pass): no effect in #SBATCH lines
    "early_help": ["#SBATCH --help"],
    "early_usage": ["#SBATCH --usage"],
    "early_version": ["#SBATCH -V"],
    "early_quiet_verbose": ["#SBATCH -Q -v"],
    "early_wrap": ["#SBATCH --wrap=x"],
    # merging and cross-option checks
    "mem_and_mem_per_cpu": ["#SBATCH --mem=8G", "#SBATCH --mem-per-cpu=2G"],
    "gpus_per_node_and_gres": ["#SBATCH --gpus-per-node=2 --gres=gpu:2"],
    "exclusive_then_oversubscribe": ["#SBATCH --exclusive --oversubscribe"],
    "oversubscribe_then_exclusive": ["#SBATCH --oversubscribe --exclusive"],
    "exclusive_twice": ["#SBATCH --exclusive --exclusive=user"],
    "requeue_pair": ["#SBATCH --no-requeue --requeue"],
    "cpus_per_task_and_gpu": ["#SBATCH -c 4 --cpus-per-gpu=2 -G 2"],
    "ntasks_per_gpu_and_gpus_per_task": ["#SBATCH --ntasks-per-gpu=2 --gpus-per-task=1 -G 2"],
    "ntasks_per_gpu_and_per_node": ["#SBATCH --ntasks-per-gpu=2 --ntasks-per-node=2 -G 2"],
    "core_and_thread_spec": ["#SBATCH --core-spec=1 --thread-spec=1"],
    "mem_per_gpu_without_gpu": ["#SBATCH --mem-per-gpu=1G"],
    "mem_per_gpu_with_gres": ["#SBATCH --mem-per-gpu=1G --gres=gpu:1"],
    "gpus_below_per_task": ["#SBATCH --gpus-per-task=2 -n 2 --gpus=1"],
    "gpus_not_multiple_per_node": ["#SBATCH --gpus=3 --gpus-per-node=2 -N 2"],
    "ntasks_per_gpu_alone": ["#SBATCH --ntasks-per-gpu=2"],
    "gpus_node_range": ["#SBATCH --gpus=4 -N 2-4"],
    "gpus_one_node_range": ["#SBATCH --gpus=1 -N 1-2"],
    "gpus_per_task_per_node": ["#SBATCH --gpus-per-task=1 --ntasks-per-node=2"],
    "gpus_per_task_with_gpus": ["#SBATCH --gpus-per-task=1 --gpus=4"],
    "gpus_below_gres": ["#SBATCH --gres=gpu:2 --gpus=1 -N 2"],
    "gpus_below_per_node": ["#SBATCH --gpus=2 --gpus-per-node=4"],
    "gpus_not_multiple_per_task": ["#SBATCH --gpus=4 -n 2 --gpus-per-task=3"],
    "gpus_below_nodes": ["#SBATCH --gpus=1 -n 4 -N 2"],
    "cpus_per_gpu_alone": ["#SBATCH --cpus-per-gpu=2"],
    # #PBS / #BSUB
    "pbs_resources": ["#PBS -l nodes=2:ppn=4,walltime=2:00:00,mem=4gb", "#PBS -q cpu", "#PBS -m abe", "#PBS -M a@b.c"],
    "pbs_select": ["#SBATCH -N 3", "#PBS -l select=2:ncpus=8:mpiprocs=4"],
    "pbs_accelerators_export": ["#PBS -l naccelerators=2", "#PBS -v FOO=1", "#PBS -v BAR=2"],
    "pbs_file": ["#PBS -l file=10gb"],
    "pbs_mail_bad": ["#PBS -m x"],
    "pbs_stray": ["#PBS -N name stray"],
    "pbs_bad_walltime": ["#PBS -l walltime=abc", "#SBATCH -t 5"],
    "bsub_wins_over_pbs": ["#BSUB -n 4", "#BSUB -W 30", "#BSUB -J bj", "#PBS -N pj"],
    "pbs_misc": ["#PBS -J 1-5", "#PBS -W depend=afterok:1", "#PBS -o none", "#PBS -e err.txt"],
    "pbs_ignored_by_directive": ["#SBATCH --ignore-pbs", "#PBS -N ignored"],
    "bsub_exclusive_mem": ["#BSUB -x", "#BSUB -q cpu", "#BSUB -M 1000"],
    "pbs_after_command": ["echo hi", "#PBS -N late"],
    "pbs_procs": ["#PBS -l procs=8"],
    "pbs_pmem_vmem": ["#PBS -l pmem=2gb,vmem=4gb"],
    "pbs_ignored_flags": ["#PBS -j oe -V -S /bin/bash -r y"],
    "pbs_torque_gpus_shared": ["#PBS -l nodes=1:ppn=4:gpus=1:shared"],
    "pbs_host_list": ["#PBS -l nodes=node01+node02"],
    "pbs_nodes_walltime": ["#PBS -l nodes=2,walltime=10:00"],
    "pbs_select_ngpus": ["#PBS -l select=1:ncpus=4:ngpus=1:mem=8gb"],
    "pbs_walltime_minutes": ["#PBS -l walltime=100"],
    "pbs_account_quoted_name": ['#PBS -A acct -N "a b"'],
    "pbs_umask": ["#PBS -W umask=022"],
    "pbs_group_list": ["#PBS -W group_list=x"],
    "pbs_keep": ["#PBS -k oe"],
    "pbs_torque_array": ["#PBS -t 1-10%2"],
    "pbs_two_resource_lists": ["#PBS -l mem=1000mb -l walltime=1:00:00"],
    "pbs_mail_n": ["#PBS -m n"],
    "pbs_priority_negative": ["#PBS -p -5"],
    "bsub_task_range": ["#BSUB -q cpu -n 2,4"],
    "bsub_task_range_open": ["#BSUB -n 4,"],
    "bsub_streams": ["#BSUB -e none -o out.txt"],
    "bsub_hosts": ['#BSUB -m "gpu01 gpu02"'],
    "bsub_time_name": ["#BSUB -W 1:30 -J name"],
    "bsub_exclusive_memory": ["#BSUB -x -M 2048"],
    "pbs_over_sbatch_tasks": ["#PBS -l nodes=2:ppn=8", "#SBATCH -n 4"],
}

# Integer edge cases of every count option: sbatch reads a count with strtol (clamped to the C long
# range; the clamped LONG_MAX is refused "to big"), stores it in a 32-bit int (2**32 wraps to 0,
# 2**32 - 1 to -1) and only then checks it (-n/-c negative refused, -n 0 means unset, -c 0 refused);
# node counts are cast to int before their checks; GPU counts are not wrapped. Verdicts, merged
# options and job fields (e.g. --ntasks-per-node=4294967295 kept by slurmctld as 65535) come from
# the oracle at test time.
_COUNT_OPTIONS = (
    "ntasks",
    "cpus-per-task",
    "nodes",
    "ntasks-per-node",
    "cpus-per-gpu",
    "gpus-per-node",
    "gpus",
    "gpus-per-task",
    "gpus-per-socket",
    "mincpus",
    "ntasks-per-core",
    "ntasks-per-gpu",
    "ntasks-per-socket",
    "sockets-per-node",
    "cores-per-socket",
    "threads-per-core",
    "core-spec",
    "thread-spec",
)
_COUNT_VALUES = {
    "minus1": "-1",
    "minus0": "-0",
    "zero": "0",
    "int_max": "2147483647",
    "int_max1": "2147483648",
    "three_e9": "3000000000",
    "uint_max": "4294967295",
    "two32": "4294967296",
    "two32_1": "4294967297",
    "long_max": "9223372036854775807",
    "long_max1": "9223372036854775808",
    "two64": "18446744073709551616",
    "plus": "+4",
    "zeros": "007",
    "space": "' 4'",
    "tab": "'\t4'",
    "trailing": "4x",
}
# Other numeric options around the same edges (strtol/strtoll and the C type each is kept in).
_NUMERIC_FORMS = {
    "nice": "--nice={}",
    "time": "-p cpu --time={}",
    "time_min": "--time-min={}",
    "tmp": "--tmp={}",
    "mem": "--mem={}",
    "mem_per_cpu": "--mem-per-cpu={}",
    "throttle": "--array=0-3%{}",
    "signal": "--signal={}",
    "signal_time": "--signal=USR1@{}",
    "switches": "--switches={}",
    "extra_node_info": "-B {}",
    "plane": "--distribution=plane={} -n 4",
    "delay_boot": "--delay-boot={}",
    "priority": "--priority={}",
    "wait_all_nodes": "--wait-all-nodes={}",
}
_NUMERIC_VALUES = {
    "minus1": "-1",
    "int_max1": "2147483648",
    "uint_max": "4294967295",
    "two32": "4294967296",
    "long_max1": "9223372036854775808",
    "plus": "+4",
    "zeros": "007",
    "space": "' 4'",
}
# left out: --mem/--mem-per-cpu=4294967295 (the oracle reads scontrol's rounded "4T" as 4294967296)
PROBES.update(
    {
        f"numeric_{o}_{k}": ["#SBATCH " + f.format(v)]
        for o, f in _NUMERIC_FORMS.items()
        for k, v in _NUMERIC_VALUES.items()
        if not (o in ("mem", "mem_per_cpu") and k == "uint_max")
    }
)

# GPU counts with a sign or leading blanks are compared by verdict only (GRES_COUNT_PROBES below):
# Slurm stores the TRES text as written ("gres:gpu:+4") and the oracle's reader takes "+4" for a type,
# while Slurm's own GRES parser reads it with strtoull as the count 4.
_COUNT_GAPS = {
    (o, v)
    for o in ("gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket")
    for v in ("minus1", "minus0", "space", "tab", "plus")
}
PROBES.update(
    {
        f"count_{o}_{k}": [f"#SBATCH --{o}={v}"]
        for o in _COUNT_OPTIONS
        for k, v in _COUNT_VALUES.items()
        if (o, k) not in _COUNT_GAPS
    }
)
PROBES.update(
    {
        "nodes_range_min_wraps": ["#SBATCH --nodes=3000000000-5"],
        "nodes_range_max_wraps": ["#SBATCH --nodes=2-3000000000"],
        "nodes_range_max_zero": ["#SBATCH --nodes=2-4294967296"],
        "nodes_kilo_wraps": ["#SBATCH --nodes=4194304k"],
        "nodes_kilo_negative": ["#SBATCH --nodes=2097152k"],
        "nodes_mega_wraps": ["#SBATCH --nodes=4096m"],
        "nodes_kilo_long_wrap": ["#SBATCH --nodes=9007199254740992k"],
        "ntasks_per_node_wraps_with_n": ["#SBATCH --ntasks-per-node=4294967295 -n 2"],
        "cpus_per_gpu_minus1_untyped": ["#SBATCH --cpus-per-gpu=4294967295 --gpus=1"],
        "cpus_per_gpu_minus1_per_node": ["#SBATCH --gpus-per-node=1 --cpus-per-gpu=4294967295"],
        "cpus_per_gpu_minus1_typed": ["#SBATCH --gpus=a100:1 --cpus-per-gpu=4294967295"],
        "cpus_per_gpu_wraps_gres": ["#SBATCH --gres=gpu:1 --cpus-per-gpu=3000000000"],
        "cpus_per_gpu_zero_after_wrap": ["#SBATCH --gpus=2 --cpus-per-gpu=4294967296"],
        "core_spec_thread_bit": ["#SBATCH --core-spec=32768"],
        "core_spec_no_val": ["#SBATCH --core-spec=65534"],
        "thread_spec_thread_bit": ["#SBATCH --thread-spec=32768"],
        "mem_beyond_long": ["#SBATCH --mem=9223372036854775808"],
        # huge times: Slurm computes seconds in a C int and stores minutes unsigned
        "time_wraps_35791395": ["#SBATCH -p cpu -t 35791395"],
        "time_wraps_to_zero": ["#SBATCH -p cpu -t 71582788"],
        "time_wraps_to_infinite": ["#SBATCH -p cpu -t 2147483646"],
        "time_wraps_1e9": ["#SBATCH -p cpu -t 1000000000"],
        "time_huge_seconds": ["#SBATCH -p cpu -t 0:99999999999"],
        "time_huge_hours": ["#SBATCH -p cpu -t 1-99999999"],
        "delay_boot_minus1": ["#SBATCH --delay-boot=-1"],
        "delay_boot_infinite": ["#SBATCH --delay-boot=INFINITE"],
        "delay_boot_wraps": ["#SBATCH --delay-boot=2147483647"],
        "delay_boot_seconds": ["#SBATCH --delay-boot=0:99999999999"],
        "delay_boot_ms": ["#SBATCH --delay-boot=2:30"],
        # -N 0 keeps no node count, but with a task count slurmctld records at least one node
        "nodes_zero_tasks": ["#SBATCH -N 0 -n 2"],
        "nodes_zero_one_task": ["#SBATCH -N 0 -n 1"],
        "nodes_zero_range_tasks": ["#SBATCH -N 0-4 -n 2"],
        "nodes_zero_cpus": ["#SBATCH -N 0 -c 2"],
        "nodes_zero_tasks_per_node": ["#SBATCH -N 0 --ntasks-per-node=2"],
        "nodes_zero_gpus": ["#SBATCH -N 0 --gpus=2"],
    }
)

# (environment items, sbatch command-line words) applied to two small scripts
PRECEDENCE_RUNS = {
    "env_time": ([("SBATCH_TIMELIMIT", "30")], []),
    "env_mem_dropped": ([("SBATCH_MEM_PER_CPU", "2G")], []),
    "env_exclusive_empty": ([("SBATCH_EXCLUSIVE", "")], []),
    "env_flags": ([("SBATCH_NO_REQUEUE", "0"), ("SBATCH_REQUEUE", "yes")], []),
    "env_invalid_time": ([("SBATCH_TIMELIMIT", "abc")], []),
    "cli_over_env": ([("SBATCH_NODES", "3"), ("SBATCH_PARTITION", "cpu")], ["-p", "debug", "-t", "5"]),
    "env_gpu_checks": ([("SBATCH_CPUS_PER_GPU", "2"), ("SBATCH_GPUS", "1")], []),
    "env_two_mems": ([("SBATCH_MEM_PER_CPU", "2G"), ("SBATCH_MEM_PER_GPU", "1G")], []),
    "cli_memory": ([("SBATCH_EXCLUSIVE", "user"), ("SBATCH_OVERCOMMIT", "no")], ["--mem-per-cpu=1G"]),
    "cli_name": (
        [("SBATCH_JOB_NAME", "envname"), ("SBATCH_EXPORT", "NONE"), ("SBATCH_SIGNAL", "B:USR1@60")],
        ["-J", "cliname", "--exclusive"],
    ),
}
PRECEDENCE_SCRIPTS = {"prec_a": ["#SBATCH -t 10 --mem=8G -c 4"], "prec_b": ["#SBATCH -N 2"]}


def _write(directory, name, lines):
    path = directory / f"{name}.sh"
    path.write_text("#!/bin/bash\n" + "".join(f"{ln}\n" for ln in lines) + "srun hostname\n")
    return path


def _score(slurm_oracle, tmp, scripts, env=(), args=()):
    oracle = slurm_oracle.resolve(scripts, env=env, sbatch_args=args)
    ojson = tmp / "oracle.jsonl"
    oracle.write_jsonl(ojson)
    run = oracles.inspect_json(scripts, sbatch_env=env, sbatch_args=args)
    tjson = tmp / "translator.jsonl"
    tjson.write_text("".join(__import__("json").dumps(r) + "\n" for r in run.records.values()))
    return oracles.compare_with_oracle(ojson, tjson)


def _problems(doc):
    t = doc["totals"]
    out = [
        f"{d['script']}: {d['field']} oracle={d['oracle']!r} translator={d['translator']!r}"
        for d in doc["disagreements"]
    ]
    out += [f"rejection: {d}" for d in doc.get("rejection_disagreements", [])]
    if doc.get("only_oracle") or doc.get("only_translator"):
        out.append(f"unmatched: {doc.get('only_oracle')} {doc.get('only_translator')}")
    return t, out


def test_probes_agree_with_slurm(slurm_oracle, tmp_path):
    scripts = [_write(tmp_path, name, lines) for name, lines in PROBES.items()]
    doc = _score(slurm_oracle, tmp_path, scripts)
    totals, problems = _problems(doc)
    assert problems == [], doc["fidelity_line"]
    assert totals["rejections_total"] == len(PROBES)


# GRES count grammar (strtoull): with an untyped `--gpus=8`, a value Slurm read as a GPU *type* would
# be refused ("with and without type identification"), and a count above 8 fails "--gpus >=
# --gpus-per-node". So the verdicts tell count from type: "+4", " 4", "04" are 4; "-0"/"+0" are 0
# (no per-task check); "-4" is 2**64-4 and "4k" 4096 (too many); "4 " is a type.
_GRES_COUNT_VALUES = {
    "plus": "+4",
    "space": "' 4'",
    "tab": "'\t4'",
    "minus0": "-0",
    "minus4": "-4",
    "trailing_space": "'4 '",
    "zeros": "04",
    "kilo": "4k",
    "plus0": "+0",
}
GRES_COUNT_PROBES = {}
for _k, _v in _GRES_COUNT_VALUES.items():
    GRES_COUNT_PROBES[f"gpn_{_k}"] = [f"#SBATCH --gpus-per-node={_v} --gpus=8"]
    GRES_COUNT_PROBES[f"gpt_{_k}"] = [f"#SBATCH --gpus-per-task={_v} --gpus=8 -n 2"]
    GRES_COUNT_PROBES[f"gpt_alone_{_k}"] = [f"#SBATCH --gpus-per-task={_v}"]
    GRES_COUNT_PROBES[f"gres_{_k}"] = [f"#SBATCH --gres=gpu:{_v} --gpus=8"]
    GRES_COUNT_PROBES[f"gres_typed_{_k}"] = [f"#SBATCH --gres=gpu:a100:{_v}"]
GRES_COUNT_PROBES["gps_minus0"] = ["#SBATCH --gpus-per-socket=-0"]


def test_gres_count_verdicts_agree_with_slurm(slurm_oracle, tmp_path):
    scripts = [_write(tmp_path, name, lines) for name, lines in GRES_COUNT_PROBES.items()]
    doc = _score(slurm_oracle, tmp_path, scripts)
    assert doc.get("rejection_disagreements", []) == [], doc["fidelity_line"]
    assert doc["totals"]["rejections_total"] == len(GRES_COUNT_PROBES)
    assert not doc.get("only_oracle") and not doc.get("only_translator")


@pytest.mark.parametrize("run", sorted(PRECEDENCE_RUNS))
def test_precedence_agrees_with_slurm(slurm_oracle, tmp_path, run):
    env, args = PRECEDENCE_RUNS[run]
    scripts = [_write(tmp_path, name, lines) for name, lines in PRECEDENCE_SCRIPTS.items()]
    doc = _score(slurm_oracle, tmp_path, scripts, env=env, args=args)
    totals, problems = _problems(doc)
    assert problems == [], doc["fidelity_line"]
    assert totals["rejections_total"] == 2
