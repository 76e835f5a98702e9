"""Script -> SlurmJob (translator.slurm.resolve).

Scripts are built by hand from the AST contract (translator/read/ast.py) so that these tests
exercise only the resolution rules. Expectations come from the sbatch semantics notes (sections
3, 4, 6, 7, 9, 11, 15) and from what real sbatch 22.05.8 did with the same directives
(slurm-oracle observations noted per case).
"""

import pytest

from docs_text import all_docs
from translator.diagnostics import ERROR
from translator.read.ast import Directive, ForeignDirective, Script
from translator.slurm.job import JOB_FIELDS
from translator.slurm.resolve import resolve


def script(*lines, path="/jobs/train.sbatch", components=None, foreign=(), refuses=False, diagnostics=()):
    """lines: (line, [words], component=0) or (line, "w1 w2") for component 0."""
    directives = []
    for item in lines:
        number, words = item[0], item[1]
        comp = item[2] if len(item) > 2 else 0
        if isinstance(words, str):
            words = tuple(words.split())
        directives.append(Directive(number, "#SBATCH " + " ".join(words), "#SBATCH", tuple(words), comp))
    n = components or (1 + max((d.component for d in directives), default=0))
    return Script(
        path=path,
        text="",
        line_count=50,
        shebang="#!/bin/bash",
        shell="bash",
        directives=tuple(directives),
        ignored=(),
        foreign=tuple(foreign),
        body=(),
        body_start_line=40,
        components=n,
        diagnostics=tuple(diagnostics),
        sbatch_refuses=refuses,
    )


def codes(job, severity=None):
    return [d.code for d in job.diagnostics if severity is None or d.severity == severity]


def test_doc_vectors():
    j = resolve(script((2, "-N 2 -n8")))
    assert (j.fields.nodes_min, j.fields.nodes_max, j.fields.ntasks) == (2, 2, 8)
    assert resolve(script((2, "--nodes 2"))).fields.nodes_min == 2
    assert resolve(script((2, ["--job-name=my job"]))).fields.job_name == "my job"
    assert resolve(script((2, "--part=gpu"))).fields.partition == "gpu"
    assert resolve(script((2, "--mem=32G"))).fields.mem_per_node_mb == 32768
    assert resolve(script((2, "--mem=4000"))).fields.mem_per_node_mb == 4000
    assert resolve(script((2, "--mem=0"))).fields.mem_per_node_mb == 0
    assert resolve(script((2, "-t 2:30"))).fields.time_limit_seconds == 180
    assert resolve(script((2, "-t 1-12"))).fields.time_limit_seconds == 36 * 3600
    assert resolve(script((2, "-t 0"))).fields.time_limit_seconds == 0
    assert resolve(script((2, "--gres=gpu:a100"))).fields.gpus_per_node == 1
    assert resolve(script((2, "--nodes=2"), (3, "--nodes=4"))).fields.nodes_min == 4
    assert resolve(script((2, "--output=$HOME/o.log"))).fields.output == "$HOME/o.log"


def test_command_line_only_options_have_no_effect_in_directives():
    # oracle: `#SBATCH --wrap=x`, `--help`, `-V`, `-Q`, `-v` in a script are skipped by sbatch
    j = resolve(script((2, ["--wrap=python other.py", "--help", "-V", "-Qv"]), (3, "-N 2")))
    assert j.sbatch_accepts and j.options == {"nodes": "2"}
    assert codes(j).count("O223") == 5


def test_throttle_zero_is_no_limit():
    assert resolve(script((2, "--array=1-3%0"))).fields.array_throttle is None


def test_array_fields():
    f = resolve(script((2, "--array=0-15:4%2"))).fields
    assert (f.array, f.array_throttle) == ("0-15:4", 2)
    f = resolve(script((2, "--array=[1-5]"))).fields
    assert (f.array, f.array_throttle) == ("1-5", None)


@pytest.mark.parametrize(
    "words,code",
    [
        ("--exclusive user", "O205"),
        ("--mem-per=4G", "O202"),
        ("--mem=1.5G", "O207"),
        ("--excl", "O202"),
        ("--gpus-per-nodes=8", "O201"),
        ("--requeue=expedite", "O204"),
        ("--time", "O203"),
        ("-n 0", "O207"),
        ("--exclusive=topo", "O207"),
        ("--signal=BOGUS", "O207"),
    ],
)
def test_refusals(words, code):
    j = resolve(script((3, words)))
    assert j.sbatch_accepts is False
    assert code in codes(j, ERROR)
    assert all(d.line == 3 for d in j.diagnostics if d.code == code)


def test_mutual_exclusions():
    for lines, needle in [
        (((2, "--mem=8G"), (3, "--mem-per-cpu=2G")), "mutually exclusive"),
        (((2, "-c 4 --cpus-per-gpu=2 -G 2"),), "--cpus-per-gpu is mutually exclusive with --cpus-per-task"),
        (((2, "--ntasks-per-gpu=2 --gpus-per-task=1 -G 2"),), "--gpus-per-task is mutually exclusive"),
        (((2, "--ntasks-per-gpu=2 --ntasks-per-node=2 -G 2"),), "--ntasks-per-node is mutually exclusive"),
        (((2, "--core-spec=1 --thread-spec=1"),), "mutually exclusive"),
    ]:
        j = resolve(script(*lines))
        assert not j.sbatch_accepts, lines
        assert any(needle in d.message for d in j.diagnostics if d.severity == ERROR), lines


def test_not_exclusive_in_22_05():
    # real sbatch 22.05.8 accepts these (the semantics notes describe a newer Slurm)
    j = resolve(script((2, "--gpus-per-node=2 --gres=gpu:2")))
    assert j.sbatch_accepts and "O216" in codes(j)
    j = resolve(script((2, "--exclusive --oversubscribe")))
    assert j.sbatch_accepts and j.fields.exclusive is False  # the later one wins (oracle)
    assert j.options == {"exclusive": "oversubscribe", "oversubscribe": "oversubscribe"}
    j = resolve(script((2, "--oversubscribe --exclusive")))
    assert j.fields.exclusive is True
    assert j.options == {"exclusive": "exclusive", "oversubscribe": "exclusive"}


def test_gpu_request_checks_before_submit():
    assert not resolve(script((2, "--mem-per-gpu=1G"))).sbatch_accepts  # no GPU asked
    assert resolve(script((2, "--mem-per-gpu=1G --gres=gpu:1"))).sbatch_accepts
    assert not resolve(script((2, "--gpus=1 -N 2"))).sbatch_accepts  # --gpus < -N
    assert resolve(script((2, "--gpus=4 -N 2-4"))).sbatch_accepts
    assert not resolve(script((2, "--gpus=3 --gpus-per-node=2 -N 2"))).sbatch_accepts
    assert not resolve(script((2, "--gpus=2 --gpus-per-node=4"))).sbatch_accepts
    assert not resolve(script((2, "--gpus=4 -n 2 --gpus-per-task=3"))).sbatch_accepts
    assert not resolve(script((2, "--gpus-per-task=1"))).sbatch_accepts  # no task count
    assert resolve(script((2, "--gpus-per-task=1 --ntasks-per-node=2"))).sbatch_accepts
    assert resolve(script((2, "--gpus=1 -N 1-2"))).fields.nodes_max == 1  # oracle: 1-1


def test_invalid_values_checked_after_merge_stay_in_options():
    j = resolve(script((2, "--gres=gres/gpu:2")))
    assert not j.sbatch_accepts and j.options["gres"] == "gres/gpu:2"
    j = resolve(script((2, "--hint=foo")))
    assert not j.sbatch_accepts and j.options["hint"] == "foo"
    j = resolve(script((2, "--mem=1.5G")))  # refused before the merge: not in the options
    assert "mem" not in j.options


def test_mail_type_accumulates_everything_else_last_wins():
    j = resolve(script((2, "--mail-type=begin"), (3, "--mail-type=end"), (4, "-p a"), (5, "-p b")))
    assert j.options["mail-type"] == "BEGIN,END" and j.fields.partition == "b"
    assert "O212" in codes(j)  # -p b overrides -p a, reported


def test_alias_prefix_of_tasks_per_node():
    j = resolve(script((2, "--tasks=14")))
    assert j.options == {"ntasks-per-node": "14"} and j.fields.ntasks_per_node == 14
    assert {"O210", "O211"} <= set(codes(j))


def test_option_value_on_next_line_and_stray_word_line():
    j = resolve(script((2, "--nodes"), (3, "2")))
    assert j.fields.nodes_min == 2 and j.sbatch_accepts
    j = resolve(script((2, ["-J", "my", "job"])))
    assert not j.sbatch_accepts
    (d,) = [d for d in j.diagnostics if d.code == "O205"]
    assert d.line == 2 and "job" in d.message


def test_empty_word_ends_the_line():
    # -J "" -t 10 on one line: get_argument stops at the empty word, -t 10 is never read
    j = resolve(script((2, ["-J", "", "-t", "10"])))
    assert "time" not in j.options
    # -J "" then -t 10 on the next line: -J takes "-t", "10" is a stray word (oracle refuses)
    j = resolve(script((2, ["-J", ""]), (3, "-t 10")))
    assert not j.sbatch_accepts and j.fields.job_name == "-t"


def test_job_name_default_and_contract():
    j = resolve(script((2, "-N 1"), path="dir/my_job.sbatch"))
    assert j.fields.job_name == "my_job.sbatch"
    out = j.to_json()
    assert list(out) == ["path", "sbatch_accepts", "diagnostics", "options", "job"]
    assert list(out["job"]) == list(JOB_FIELDS)
    unset = [k for k, v in out["job"].items() if v is None]
    assert "nodes_min" not in unset and "partition" in unset and "exclusive" in unset


def test_field_units_and_flags():
    f = resolve(
        script(
            (2, "--mem-per-cpu=2G --exclusive=user --no-requeue --signal=B:USR1@300"),
            (3, "-G a100:4 --gpus-per-task=2 -n 2 --time=1-00:00:01"),
        )
    ).fields
    assert f.mem_per_cpu_mb == 2048 and f.exclusive is True and f.requeue is False
    assert f.signal == "B:USR1@300"
    assert (f.gpus_total, f.gpu_type, f.gpus_per_task) == (4, "a100", 2)
    assert f.time_limit_seconds == 86400 + 60  # seconds rounded up to a minute
    f = resolve(script((2, "--requeue"))).fields
    assert f.requeue is True


def test_mem_per_cpu_zero_is_whole_node():
    f = resolve(script((2, "--mem-per-cpu=0"))).fields
    assert f.mem_per_cpu_mb is None and f.mem_per_node_mb == 0  # oracle: MinMemoryCPU unset


def test_precedence_cli_over_env_over_directives():
    s = script((2, "-p gpu -t 10"))
    j = resolve(s, env={"SBATCH_PARTITION": "cpu", "SBATCH_TIMELIMIT": "30"})
    assert (j.fields.partition, j.fields.time_limit_seconds) == ("cpu", 1800)
    j = resolve(s, env={"SBATCH_PARTITION": "cpu"}, cli_args=["-p", "debug", "-t", "5"])
    assert (j.fields.partition, j.fields.time_limit_seconds) == ("debug", 300)
    sources = [(st.name, st.source) for st in j.main.settings]
    assert sources == [
        ("partition", "directive"),
        ("time", "directive"),
        ("partition", "env"),
        ("partition", "cli"),
        ("time", "cli"),
    ]


def test_env_flags_and_unknown_env():
    s = script((2, "-N 1"))
    assert resolve(s, env={"SBATCH_EXCLUSIVE": ""}).fields.exclusive is True
    assert resolve(s, env={"SBATCH_REQUEUE": "yes"}).fields.requeue is True
    assert resolve(s, env={"SBATCH_REQUEUE": "1"}).fields.requeue is True
    assert resolve(s, env={"SBATCH_REQUEUE": "0"}).fields.requeue is None  # a false value resets
    j = resolve(s, env={"SBATCH_NODES": "3"})
    assert j.fields.nodes_min == 1 and "O214" in codes(j)
    j = resolve(s, env={"SBATCH_TIMELIMIT": "abc"})
    assert not j.sbatch_accepts and "O207" in codes(j)


def test_env_memory_dropped_when_script_sets_memory():
    j = resolve(script((2, "--mem=8G")), env={"SBATCH_MEM_PER_CPU": "2G"})
    assert j.sbatch_accepts
    assert j.fields.mem_per_node_mb == 8192 and j.fields.mem_per_cpu_mb is None
    assert j.options["mem-per-cpu"] == "2G"  # merged first, then dropped (oracle dump)
    j = resolve(script((2, "-N 1")), env={"SBATCH_MEM_PER_CPU": "2G", "SBATCH_MEM_PER_GPU": "1G"})
    assert not j.sbatch_accepts


def test_hetjob_components_and_carried_options():
    s = script((2, "-J het"), (3, "-N 1 --gpus-per-node=8 -p gpu -t 10"), (5, "-N 2 -n 8 -p cpu", 1))
    j = resolve(s)
    assert len(j.components) == 2
    assert j.options == {"gpus-per-node": "8", "job-name": "het", "nodes": "1", "partition": "gpu", "time": "00:10:00"}
    c1 = j.components[1]
    # job-name and time carry over to the next component; nodes/gpus/partition do not (oracle)
    assert c1.options == {"job-name": "het", "nodes": "2", "ntasks": "8", "partition": "cpu", "time": "00:10:00"}
    assert c1.fields.job_name == "het" and c1.fields.gpus_per_node is None
    out = j.to_json()
    assert [c["index"] for c in out["components"]] == [0, 1]
    assert out["job"] == out["components"][0]["job"]


def test_hetjob_separator_directive_is_not_an_option():
    s = script((2, "-N 1"), (3, ["hetjob"], 1), (4, "-N 2", 1))
    j = resolve(s)
    assert j.sbatch_accepts and j.components[1].fields.nodes_min == 2


def test_reader_refusal_and_diagnostics_are_kept():
    from translator.diagnostics import Diagnostic

    d = Diagnostic(ERROR, "R110", "no #! line", 1)
    j = resolve(script((2, "-N 1"), refuses=True, diagnostics=[d]))
    assert j.sbatch_accepts is False and j.diagnostics[0] == d and j.fields.nodes_min == 1


def test_spank_option_warning_and_refusal():
    j = resolve(script((2, ["--container-image=nvcr.io#nvidia/pytorch:24.01-py3", "-N", "2"])))
    assert j.sbatch_accepts is False
    (d,) = [d for d in j.diagnostics if d.code == "O206"]
    assert d.severity == "warning" and "pyxis" in d.message and "22.05" in d.message
    assert j.fields.nodes_min == 2 and j.options["container-image"] == "nvcr.io#nvidia/pytorch:24.01-py3"


def test_controller_checks_are_warnings_only():
    j = resolve(script((2, "--array=0-1001 --dependency=foo:1")))
    assert j.sbatch_accepts is True
    assert codes(j).count("O209") == 2


def test_pbs_lines_override_sbatch_unless_ignored():
    foreign = (ForeignDirective(6, "#PBS -l walltime=1:00:00", "PBS"), ForeignDirective(7, "#PBS -N pbs_named", "PBS"))
    s = script((4, "-t 10"), (5, "--ntasks=2"), foreign=foreign)
    j = resolve(s)
    assert (j.fields.time_limit_seconds, j.fields.job_name, j.fields.ntasks) == (3600, "pbs_named", 2)
    assert "O220" in codes(j)
    j = resolve(s, cli_args=["--ignore-pbs"])
    assert (j.fields.time_limit_seconds, j.fields.job_name) == (600, "train.sbatch")
    j = resolve(s, env={"SBATCH_IGNORE_PBS": ""})
    assert j.fields.time_limit_seconds == 600
    j = resolve(script((4, "-t 10 --ignore-pbs"), foreign=foreign))
    assert j.fields.time_limit_seconds == 600


def test_pbs_resources_and_bsub_precedence():
    foreign = (
        ForeignDirective(3, "#PBS -l nodes=2:ppn=4,walltime=2:00:00,mem=4gb", "PBS"),
        ForeignDirective(4, "#PBS -m abe", "PBS"),
    )
    f = resolve(script(foreign=foreign)).fields
    assert (f.nodes_min, f.ntasks, f.time_limit_seconds, f.mem_per_node_mb) == (2, 8, 7200, 4096)
    # #BSUB lines win over #PBS lines: only one family is translated
    foreign = (
        ForeignDirective(3, "#BSUB -n 4", "BSUB"),
        ForeignDirective(4, "#BSUB -J bj", "BSUB"),
        ForeignDirective(5, "#PBS -N pj", "PBS"),
    )
    f = resolve(script(foreign=foreign)).fields
    assert (f.ntasks, f.job_name) == (4, "bj")
    j = resolve(script(foreign=(ForeignDirective(3, "#PBS -N name stray", "PBS"),)))
    assert not j.sbatch_accepts and "O221" in codes(j)


def test_not_expanded_values_are_flagged():
    j = resolve(script((2, ["--dependency=afterok:$PREV_JOB", "-o", "~/logs/$USER.out"])))
    assert codes(j).count("O213") == 2
    assert j.fields.output == "~/logs/$USER.out"


def test_every_code_is_documented_in_readme():
    import re
    from translator.slurm import resolve as R

    readme = all_docs()
    section = readme.split("<!-- SECTION:codes-O -->", 1)[1].split("<!-- /SECTION:codes-O -->", 1)[0]
    for code in R.CODES:
        assert re.search(rf"\|\s*{code}\s*\|", section), f"{code} missing from docs/codes.md codes-O"


# ---- robustness ------------------------------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

_TOKENS = st.sampled_from(
    [
        "-N",
        "-n",
        "-c",
        "-t",
        "-G",
        "-J",
        "-a",
        "-o",
        "--mem",
        "--gres",
        "--gpus",
        "--exclusive",
        "--requeue",
        "--part",
        "--tasks",
        "--mem-per",
        "--signal",
        "--mail-type",
        "--nodes",
        "--time",
        "--array",
        "-HOs",
        "--container-image",
        "--wrap",
        "2",
        "0",
        "-1",
        "1-",
        "2-1",
        "4G",
        "1.5G",
        "gpu:a100:2",
        "gres/gpu",
        "a100:x",
        "USR1@",
        "B:",
        "ALL",
        "user",
        "%",
        "[1-5]",
        "=",
        "--",
        ":",
        "",
        "$HOME",
        "--nice",
        "-k",
        "--no-kill=off",
    ]
)
_WORD = st.one_of(_TOKENS, st.tuples(_TOKENS, st.sampled_from(["=", ""]), _TOKENS).map("".join), st.text(max_size=8))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(_WORD, max_size=6), max_size=6),
    st.dictionaries(
        st.sampled_from(
            [
                "SBATCH_TIMELIMIT",
                "SBATCH_EXCLUSIVE",
                "SBATCH_MEM_PER_CPU",
                "SBATCH_GPUS",
                "SBATCH_REQUEUE",
                "SBATCH_NODES",
                "SBATCH_SIGNAL",
            ]
        ),
        st.text(max_size=6),
        max_size=3,
    ),
    st.lists(_WORD, max_size=4),
)
def test_resolve_never_raises(lines, env, cli_args):
    import json

    s = script(*[(i + 2, tuple(words)) for i, words in enumerate(lines)])
    j = resolve(s, env=env, cli_args=cli_args)
    assert isinstance(j.sbatch_accepts, bool)
    json.dumps(j.to_json())
    if j.sbatch_accepts:
        assert not any(d.severity == ERROR and d.code.startswith("O") for d in j.diagnostics)


def test_submit_host_dependent_values_are_warnings():
    # real sbatch refuses these when the file/cluster/user is missing where it runs; the script
    # alone cannot tell, so they are warnings and sbatch_accepts stays true
    for words in ("--nodefile=hosts.txt", "-w ./hosts.txt", "--export-file=job.env", "-M other", "--uid=alice"):
        j = resolve(script((2, words)))
        assert j.sbatch_accepts and "O225" in codes(j), words
    assert "O225" not in codes(resolve(script((2, "-w gpu[01-02]"))))


def test_task_count_limits_nodes_of_the_submitted_job():
    # oracle: -N 4 -n 2 -> NumNodes=2-2; -N 2-4 -n 3 -> 2-3; -N 2-3 -n 1 -> 1-1 (options unchanged)
    for words, nodes in (
        ("-N 4 -n 2", (2, 2)),
        ("-N 2-4 -n 3", (2, 3)),
        ("-N 2-3 -n 1", (1, 1)),
        ("-N 1-4 --gpus=4 --gpus-per-node=2", (2, 2)),
    ):
        j = resolve(script((2, words)))
        assert (j.fields.nodes_min, j.fields.nodes_max) == nodes, words
    assert resolve(script((2, "-N 4 -n 2"))).options["nodes"] == "4"


def test_gpu_layout_must_fit_the_node_range():
    # oracle: "required nodes (2) doesn't fall between min_nodes (1) and max_nodes (1)"
    for words in (
        "-N 1 --gpus=4 --gpus-per-node=2",
        "-N 3 --gpus=4 --gpus-per-node=2",
        "-N 2 -n 1 --gpus=4 --gpus-per-node=2",
    ):
        j = resolve(script((2, words)))
        assert not j.sbatch_accepts and "O208" in codes(j), words
    # a refused job reports the node count as written
    j = resolve(script((2, "-N 2 -n 1 --gpus=4 --gpus-per-node=2")))
    assert (j.fields.nodes_min, j.fields.nodes_max) == (2, 2)


def test_empty_values():
    # oracle: `--gpus=`/`--gres=` pass sbatch; slurmctld stores empty account/array/constraint/dependency as none
    j = resolve(
        script(
            (2, ["--gpus=", "--account=", "--array=", "--constraint=", "--dependency=", "--comment=", "--job-name="])
        )
    )
    f = j.fields
    assert j.sbatch_accepts
    assert (f.gpus_total, f.account, f.array, f.constraint, f.dependency) == (None, None, None, None, None)
    assert (f.comment, f.job_name) == ("", "")
    assert not resolve(script((2, "--time="))).sbatch_accepts


def test_settings_record_source_line_and_spelling():
    j = resolve(
        script((2, "-N2 --part=gpu"), (3, "--nodes"), (4, "3")), env={"SBATCH_PARTITION": "cpu"}, cli_args=["-t", "5"]
    )
    got = [(s.name, s.value, s.source, s.line, s.written) for s in j.main.settings]
    assert got == [
        ("nodes", "2", "directive", 2, "-N2"),
        ("partition", "gpu", "directive", 2, "--part=gpu"),
        ("nodes", "3", "directive", 3, "--nodes (line 3) 3 (line 4)"),
        ("partition", "cpu", "env", None, "SBATCH_PARTITION=cpu"),
        ("time", "00:05:00", "cli", None, "-t 5"),
    ]


def test_hetjob_command_line_components_split_at_colon():
    s = script((2, "-N 1"), (4, "-N 2", 1))
    j = resolve(s, cli_args=["-p", "gpu", ":", "-p", "cpu"])
    assert [c.fields.partition for c in j.components] == ["gpu", "cpu"]
    j = resolve(s, cli_args=["-p", "gpu"])  # no `:`: only component 0 gets them
    assert [c.fields.partition for c in j.components] == ["gpu", None]


def test_repeated_lines_give_one_override_diagnostic():
    j = resolve(script(*[(i + 2, f"-N {1 + i % 2}") for i in range(50)]))
    (d,) = [d for d in j.diagnostics if d.code == "O212"]
    assert d.line == 51 and "50 times" in d.message and j.fields.nodes_min == 2


def test_begin_and_deadline_compare_a_bare_now():
    # sbatch (opt.c) refuses a deadline before the begin time; a bare `now` is the submit time itself.
    # oracle probes begin_now_deadline_later / deadline_now_before_begin (tests/test_slurm_oracle_probes.py)
    assert resolve(script((2, "--begin=now --deadline=now+1hour"))).sbatch_accepts
    j = resolve(script((2, "--begin=now+2hours --deadline=now")))
    assert not j.sbatch_accepts and "O208" in codes(j)


def test_typed_and_untyped_gpu_requests_across_options_are_refused():
    # oracle: "Invalid GRES specification (with and without type identification)"
    for words in (
        "--gres=gpu:a100:2 --gpus-per-node=2",
        "--gpus=2 --gpus-per-task=a100:1 -n 2",
        "--gpus-per-node=a100:2 --gpus=4 -N 2",
    ):
        j = resolve(script((2, words)))
        assert not j.sbatch_accepts and "O208" in codes(j), words
    assert resolve(script((2, "--gres=gpu:a100:2 --gpus-per-node=a100:2"))).sbatch_accepts


@pytest.mark.parametrize(
    "words,accepted",
    [
        # observed with sbatch 22.05.8 (slurm-oracle)
        ("--gpus-per-task=2 -n 3 --gpus=4", False),  # tasks from GPUs (2) differ from -n
        ("--gpus-per-task=2 -n 3 --gpus=6", True),
        ("--gpus-per-socket=2 --gpus-per-node=1 --sockets-per-node=2", False),
        ("--gpus-per-node=4 --gpus-per-task=2 --ntasks-per-node=4", False),
        ("--gpus-per-node=4 -N 2 --gpus-per-task=1 --ntasks-per-node=4", True),
        ("--gpus=3 --gpus-per-node=2", False),
        ("--gpus-per-task=1 -N 2", True),  # a single node count gives a task count
        ("--gpus-per-task=1 --nodes=1-3", False),
        ("--gpus-per-node=2 --gpus-per-task=1", False),
        ("--gpus-per-task=3 --gpus-per-node=4 -n 2", False),
    ],
)
def test_gpu_request_consistency(words, accepted):
    assert resolve(script((2, words))).sbatch_accepts is accepted


def test_ntasks_per_gpu_sets_the_task_count():
    # oracle: --ntasks-per-gpu=2 --gres=gpu:2 -n 8 -> NumTasks=4; with --gpus=3 -> 6
    assert resolve(script((2, "--ntasks-per-gpu=2 --gres=gpu:2 -n 8"))).fields.ntasks == 4
    assert resolve(script((2, "--ntasks-per-gpu=2 --gpus=3 -n 8"))).fields.ntasks == 6
    assert resolve(script((2, "--ntasks-per-gpu=2 --gpus-per-node=2 -N 2 -n 100"))).fields.ntasks == 8


def test_wrapper_time_and_torque_gpus():
    # oracle: `#BSUB -W 2:30` is read with sbatch's time grammar (2 min 30 s -> 3 min);
    # Torque `nodes=2:ppn=8:gpus=4` gives 2 nodes, 16 tasks and --gpus-per-node=4
    f = resolve(script(foreign=(ForeignDirective(3, "#BSUB -W 2:30", "BSUB"),))).fields
    assert f.time_limit_seconds == 180
    j = resolve(script(foreign=(ForeignDirective(3, "#PBS -l nodes=2:ppn=8:gpus=4", "PBS"),)))
    assert (j.fields.nodes_min, j.fields.ntasks, j.fields.gpus_per_node) == (2, 16, 4)
    assert j.options["gpus-per-node"] == "4"
