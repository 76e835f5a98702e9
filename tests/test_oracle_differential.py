"""Differential tests: `slurm2kf inspect --json` against real Slurm 22.05 (the shared oracle).

Every corpus script (tests/fixtures/sbatch/* and the oracle's samples/*.sh) is read once by real
sbatch/slurmctld (resolve.py, one call per session) and once by `slurm2kf inspect --json` (one
subprocess for all files). Then:

* the shared scorer compare.py must report 100 % of job fields agreeing, every rejection
  agreeing, every script matched, and every sbatch option agreeing;
* per script (parametrized, so a failure names the fixture): each job field the script sets
  equals Slurm's value, and `sbatch_accepts` is false exactly for scripts sbatch refuses;
* fields the script does not set are null (the contract), het jobs agree component by
  component, and the explanation for people gives the same verdict per script;
* precedence (command line > SBATCH_* environment > #SBATCH): the same script through the
  oracle with `--env`/`--sbatch-arg` and through `inspect --sbatch-env ... -- ARGS`.

Generated edge scripts (empty file, CR-only line breaks, non-UTF-8 bytes, 10 MB) join the
corpus; see oracles.EDGE_SCRIPTS.

The oracle must be running (./test.sh starts it). When it is not, these tests FAIL.
"""

from __future__ import annotations

import json
import os
import re
import types
from pathlib import Path

import pytest

import oracles

pytestmark = pytest.mark.slurm

FIXTURES = oracles.fixture_scripts()
SHARED_SAMPLES_GLOB = "slurm-oracle/samples/*.sh"


def _sample_scripts():
    try:
        return sorted((oracles.shared_dir()).glob(SHARED_SAMPLES_GLOB))
    except oracles.OracleMissing:
        return []  # the shared_dir fixture makes the tests fail with the reason


EDGE_KEYS = ["generated/" + name for name in sorted(oracles.EDGE_SCRIPTS)]
ALL_SCRIPTS = FIXTURES + EDGE_KEYS + _sample_scripts()


def _id(key) -> str:
    if isinstance(key, str):
        return key
    return key.name if key.parent == oracles.FIXTURES else "samples/" + key.name


@pytest.fixture
def corpus_path(edge_scripts_dir):
    """Map a parametrize key (a Path, or "generated/<name>" for an edge script) to its path."""

    def path(key):
        if isinstance(key, str) and key.startswith("generated/"):
            return edge_scripts_dir / key.split("/", 1)[1]
        return key

    return path


@pytest.fixture(scope="session")
def inspect_corpus(corpus_scripts):
    """`slurm2kf inspect --json` over the whole corpus, in ONE subprocess."""
    return oracles.inspect_json(corpus_scripts)


@pytest.fixture(scope="session")
def compare_report(slurm_oracle, inspect_corpus, tmp_path_factory):
    """The shared compare.py --json verdict on the whole corpus."""
    d = tmp_path_factory.mktemp("differential")
    oracle_file = slurm_oracle.write_jsonl(d / "oracle.jsonl")
    ours = d / "translator.jsonl"
    ours.write_text(inspect_corpus.jsonl, encoding="utf-8")
    return oracles.compare_with_oracle(oracle_file, ours)


CONTRACT_TOP = ("path", "sbatch_accepts", "diagnostics", "options", "job")
CONTRACT_JOB = (
    "job_name",
    "partition",
    "account",
    "qos",
    "nodes_min",
    "nodes_max",
    "ntasks",
    "ntasks_per_node",
    "cpus_per_task",
    "gpus_per_node",
    "gpus_per_task",
    "gpus_total",
    "gpu_type",
    "mem_per_node_mb",
    "mem_per_cpu_mb",
    "mem_per_gpu_mb",
    "time_limit_seconds",
    "array",
    "array_throttle",
    "dependency",
    "exclusive",
    "constraint",
    "output",
    "error",
    "chdir",
    "requeue",
    "signal",
    "export",
    "comment",
)


def _fmt(items, limit=40):
    lines = ["  %s" % (x,) for x in items[:limit]]
    if len(items) > limit:
        lines.append("  ... %d more" % (len(items) - limit))
    return "\n".join(lines)


# ------------------------------------------------------------------ whole-corpus scorer
def test_inspect_answers_for_every_corpus_script(corpus_scripts, inspect_corpus):
    missing = [str(p) for p in corpus_scripts if oracles.realpath(p) not in inspect_corpus.records]
    assert not missing, "inspect --json printed no record for:\n" + _fmt(missing)


def test_inspect_exit_status_over_corpus(inspect_corpus, slurm_oracle, corpus_scripts):
    """One refused script in the batch makes the exit status 1 (the corpus has several)."""
    refused = [p for p in corpus_scripts if slurm_oracle[p]["rejected_by"] == "sbatch"]
    assert refused, "the corpus must contain scripts sbatch refuses"
    assert inspect_corpus.returncode == 1, inspect_corpus.stderr[-2000:]


def test_compare_every_script_matched(compare_report):
    assert compare_report["matched"] == len(ALL_SCRIPTS)
    assert not compare_report["only_oracle"], "no inspect record for:\n" + _fmt(compare_report["only_oracle"])
    assert not compare_report["only_translator"], _fmt(compare_report["only_translator"])
    assert not compare_report["duplicates"], _fmt(compare_report["duplicates"])


def test_compare_every_rejection_agrees(compare_report):
    t = compare_report["totals"]
    assert not compare_report["rejections"]["no_verdict"], "the oracle gave no verdict for some scripts"
    assert t["rejections_agree"] == t["rejections_total"], "%s\n%s" % (
        compare_report["fidelity_line"],
        _fmt(compare_report["rejection_disagreements"]),
    )


def test_compare_all_job_fields_agree(compare_report):
    t = compare_report["totals"]
    job_dis = [d for d in compare_report["disagreements"] if not d["field"].startswith("options.")]
    assert t["fields_compared"] > 500
    assert t["fields_agree"] == t["fields_compared"], "%s\n%s" % (
        compare_report["fidelity_line"],
        _fmt([(Path(d["script"]).name, d["field"], d["kind"], d["oracle"], d["translator"]) for d in job_dis]),
    )


def test_compare_all_options_agree(compare_report):
    """The contract's `options` map: every option sbatch set, merged as sbatch merges them."""
    t = compare_report["totals"]
    opt_dis = [d for d in compare_report["disagreements"] if d["field"].startswith("options.")]
    assert t["options_agree"] == t["options_compared"] and not opt_dis, "options %.1f%% agree\n%s" % (
        t["options_pct"],
        _fmt([(Path(d["script"]).name, d["field"], d["kind"], d["oracle"], d["translator"]) for d in opt_dis]),
    )


# Fields Slurm itself fills from an option that names another field (so "not set by the script"
# does not mean null): --mem-per-cpu=0 becomes MinMemoryNode=0 (the whole node).
DERIVED_ALLOWED = {("mem_per_node_mb", 0)}


def test_fields_the_script_does_not_set_are_null(compare_report, slurm_oracle):
    """Contract: a job field is null when the script does not set it (job_name excepted;
    exclusive may be false). compare.py lists such values without scoring them. Scripts sbatch
    refuses are left out: Slurm resolved nothing for them."""
    given = [
        (Path(e["script"]).name, f, e["translator"])
        for f, entries in compare_report["unset_but_given"].items()
        for e in entries
        if (f, e["translator"]) not in DERIVED_ALLOWED and slurm_oracle[e["script"]]["rejected_by"] != "sbatch"
    ]
    assert not given, "values for fields the script does not set:\n" + _fmt(given)


def test_human_inspect_over_corpus(corpus_scripts, slurm_oracle, cli_subprocess):
    """The explanation for people, over every corpus script in one process: no traceback, a
    verdict line per script that matches Slurm's, exit 1 because some scripts are refused."""
    proc = cli_subprocess("inspect", *[str(p) for p in corpus_scripts])
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 1, proc.stderr[-2000:]
    for p in corpus_scripts:
        refused = slurm_oracle[p]["rejected_by"] == "sbatch"
        word = "refuse" if refused else "accept"
        # the script's heading: the first line naming it that is not a `path:line:` diagnostic
        heads = [
            ln for ln in proc.stdout.splitlines() if str(p) in ln and not re.search(re.escape(str(p)) + r":\d", ln)
        ]
        assert heads, "no heading line for %s" % p
        assert word in heads[0].lower(), "heading %r lacks the verdict %r" % (heads[0], word)


# ------------------------------------------------------------------ per-script assertions
@pytest.mark.parametrize("script", ALL_SCRIPTS, ids=_id)
def test_sbatch_verdict_matches_slurm(script, slurm_oracle, inspect_corpus, corpus_path):
    script = corpus_path(script)
    rec = slurm_oracle[script]
    ours = inspect_corpus.records.get(oracles.realpath(script))
    assert ours is not None, "no inspect record"
    refused = rec["rejected_by"] == "sbatch"
    errors = [d for d in ours.get("diagnostics", []) if d.get("severity") == "error"]
    if refused:
        assert ours["sbatch_accepts"] is False, "sbatch refuses it (%s) but inspect says it accepts" % rec["error"]
        assert errors, "a refused script needs an error diagnostic saying why (sbatch: %s)" % rec["error"]
        assert all(isinstance(d.get("line"), (int, type(None))) for d in errors)
    else:
        assert ours["sbatch_accepts"] is True, "sbatch accepts it (Slurm: %s) but inspect refuses: %s" % (
            "accepted" if rec["accepted"] else "slurmctld: " + str(rec["error"]),
            [(d.get("code"), d.get("line"), d.get("message")) for d in errors],
        )


# What sbatch's refusal message names -> what one of our error diagnostics must mention.
# (regex over Slurm's message, function of the match giving the texts we expect to see, or the
# line number we expect an error on.)
REFUSAL_NAMES = [
    (r"line (\d+): ", lambda m: {"line": int(m.group(1))}),
    (r"Invalid directive found in batch script: (\S+)", lambda m: {"text": [m.group(1)]}),
    (r"unrecognized option '(--[^'=]+)", lambda m: {"text": [m.group(1)]}),
    (r"invalid option -- '(.)'", lambda m: {"text": [m.group(1)]}),
    (r"option '(--[^'=]+)(?:=[^']*)?' is ambiguous", lambda m: {"text": [m.group(1)]}),
    (r"option requires an argument -- '(.)'", lambda m: {"text": [m.group(1)]}),
    (r"option '(--[^'=]+)' doesn't allow an argument", lambda m: {"text": [m.group(1)]}),
    (r'"([^"]*)" is not a valid node count', lambda m: {"text": [m.group(1)]}),
    (r'Invalid numeric value "([^"]*)" for (--[\w-]+)', lambda m: {"text": [m.group(1), m.group(2)]}),
    (r"Invalid (--[\w-]+) specification", lambda m: {"text": [m.group(1)]}),
    (r"DOS line breaks", lambda m: {"text_any": ["CRLF", "DOS", "\\r\\n"]}),
    (r"NULL character", lambda m: {"text_any": ["NUL"]}),
    (r"does not look like a batch script", lambda m: {"line": 1}),
    (r"mutually exclusive", lambda m: {"text_any": ["mutually exclusive", "exclusive"]}),
]


def test_refusal_diagnostics_name_what_sbatch_names(slurm_oracle, inspect_corpus, corpus_scripts):
    """For every script sbatch refuses, our error diagnostics point at the same line and name
    the same word/option/value as sbatch's own message (diagnostics must name the offending
    text)."""
    problems, checked = [], 0
    for p in corpus_scripts:
        rec = slurm_oracle[p]
        if rec["rejected_by"] != "sbatch":
            continue
        ours = inspect_corpus.records.get(oracles.realpath(p)) or {}
        errors = [d for d in ours.get("diagnostics", []) if d.get("severity") == "error"]
        text = " ".join(d.get("message", "") for d in errors)
        for rx, want_of in REFUSAL_NAMES:
            m = re.search(rx, rec["error"] or "")
            if not m:
                continue
            checked += 1
            want = want_of(m)
            if "line" in want and want["line"] not in [d.get("line") for d in errors]:
                problems.append((p.name, "no error at line %d" % want["line"], rec["error"][:100]))
            for t in want.get("text", []):
                if t not in text:
                    problems.append((p.name, "errors do not mention %r" % t, rec["error"][:100]))
            if "text_any" in want and not any(t.lower() in text.lower() for t in want["text_any"]):
                problems.append((p.name, "errors mention none of %r" % want["text_any"], rec["error"][:100]))
    assert checked >= 40, "too few refusal messages recognised (%d): update REFUSAL_NAMES" % checked
    assert not problems, "refusal diagnostics vs sbatch's message:\n" + _fmt(problems)


@pytest.mark.parametrize("script", ALL_SCRIPTS, ids=_id)
def test_job_fields_match_slurm(script, slurm_oracle, inspect_corpus, corpus_path):
    script = corpus_path(script)
    rec = slurm_oracle[script]
    ours = inspect_corpus.records.get(oracles.realpath(script))
    assert ours is not None, "no inspect record"
    # The contract shape holds for every script, refused ones included ("still print
    # everything we could read").
    assert set(CONTRACT_TOP) <= set(ours), "missing top-level keys: %s" % sorted(set(CONTRACT_TOP) - set(ours))
    job = ours.get("job")
    assert isinstance(job, dict) and set(CONTRACT_JOB) <= set(job), "job lacks contract keys: %s" % sorted(
        set(CONTRACT_JOB) - set(job or {})
    )
    for d in ours["diagnostics"]:
        assert d.get("severity") in ("error", "warning", "info") and d.get("code") and d.get("message"), d
    if rec["rejected_by"] == "sbatch":
        return  # sbatch resolves nothing for a refused script: the verdict test covers it
    expected = oracles.oracle_expected_job(rec)
    sdir = os.path.dirname(oracles.realpath(script))
    wrong = []
    for name, want in expected.items():
        got = job.get(name)
        if oracles.normalise_field(name, want, sdir) != oracles.normalise_field(name, got, sdir):
            wrong.append("%s: Slurm %r, inspect %r" % (name, want, got))
    assert not wrong, "fields the script sets disagree with real Slurm:\n  " + "\n  ".join(wrong)


@pytest.mark.parametrize(
    "script",
    [
        p
        for p in FIXTURES
        if p.name
        in (
            "gres_gpu_typed_multinode_torchrun.sbatch",
            "syntax_trailing_comments.sbatch",
            "mem_decimal_refused.sbatch",
            "no_shebang_refused.sbatch",
        )
    ],
    ids=_id,
)
def test_inspect_single_file_exit_status(script, slurm_oracle, cli_subprocess):
    """Exit status 0 when sbatch would accept the script, 1 when it would refuse it."""
    proc = cli_subprocess("inspect", "--json", script)
    want = 1 if slurm_oracle[script]["rejected_by"] == "sbatch" else 0
    assert proc.returncode == want, proc.stdout[-1000:] + proc.stderr[-1000:]
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------ precedence
def F(name):
    return oracles.FIXTURES / name


# (id, script, SBATCH_* environment, sbatch command-line words). Each runs through the oracle
# (resolve.py --env/--sbatch-arg) and through inspect (--sbatch-env ... -- ARGS).
PRECEDENCE_CASES = [
    (
        "env-partition-and-time-beat-directives",
        "partition_debug_over_limit_rejected.sbatch",
        [("SBATCH_PARTITION", "cpu"), ("SBATCH_TIMELIMIT", "10")],
        [],
    ),
    (
        "cli-partition-beats-env",
        "partition_debug_over_limit_rejected.sbatch",
        [("SBATCH_PARTITION", "cpu")],
        ["-p", "debug"],
    ),
    ("cli-time-beats-env-beats-directive", "time_minutes_only.sbatch", [("SBATCH_TIMELIMIT", "30")], ["--time=5"]),
    ("env-job-name-beats-directive", "job_name_quoted_spaces.sbatch", [("SBATCH_JOB_NAME", "from-env")], []),
    (
        "cli-job-name-beats-env",
        "job_name_quoted_spaces.sbatch",
        [("SBATCH_JOB_NAME", "from-env")],
        ["--job-name=from-cli"],
    ),
    ("cli-nodes-and-short-c-beat-directives", "nodes_min_max_range.sbatch", [], ["--nodes=3", "-c", "2"]),
    (
        "sbatch-nodes-is-not-an-input-variable",
        "nodes_min_max_range.sbatch",
        [("SBATCH_NODES", "5"), ("SBATCH_NTASKS", "7")],
        [],
    ),
    ("directive-memory-resets-env-memory", "mem_per_cpu_gigabytes.sbatch", [("SBATCH_MEM_PER_NODE", "8G")], []),
    (
        "two-env-memory-options-refused",
        "time_minutes_only.sbatch",
        [("SBATCH_MEM_PER_NODE", "8G"), ("SBATCH_MEM_PER_CPU", "1G")],
        [],
    ),
    ("cli-mem-with-directive-mem-per-cpu-refused", "mem_per_cpu_gigabytes.sbatch", [], ["--mem=1G"]),
    ("empty-env-exclusive-sets-it", "time_minutes_only.sbatch", [("SBATCH_EXCLUSIVE", "")], []),
    ("env-array", "time_minutes_only.sbatch", [("SBATCH_ARRAY_INX", "0-3%2")], []),
    ("env-no-requeue-beats-directive-requeue", "requeue_signal_checkpoint.sbatch", [("SBATCH_NO_REQUEUE", "1")], []),
    ("env-requeue-beats-directive-no-requeue", "no_requeue_signal_plain.sbatch", [("SBATCH_REQUEUE", "1")], []),
    (
        "env-gres-constraint-export-signal",
        "gres_bare_gpu_name.sbatch",
        [
            ("SBATCH_GRES", "gpu:a100:2"),
            ("SBATCH_CONSTRAINT", "a100"),
            ("SBATCH_EXPORT", "NONE"),
            ("SBATCH_SIGNAL", "B:USR1@60"),
        ],
        [],
    ),
    (
        "cli-account-beats-env-qos-env-beats-directive",
        "placement_partition_account_qos.sbatch",
        [("SBATCH_ACCOUNT", "EnvAccount"), ("SBATCH_QOS", "low")],
        ["--account=CliAccount"],
    ),
    ("cli-typed-gpus-with-untyped-gres-refused", "gres_gpu_untyped_count.sbatch", [], ["-G", "a100:2"]),
    ("cli-gpus-below-gres-per-node-refused", "gres_gpu_untyped_count.sbatch", [], ["-G", "2"]),
    ("cli-gpus-per-node-with-directive-gres", "gres_bare_gpu_name.sbatch", [], ["--gpus-per-node=2"]),
    ("env-on-refused-script-still-refused", "no_shebang_refused.sbatch", [("SBATCH_PARTITION", "cpu")], []),
    ("env-ignore-pbs", "pbs_lines_translated.sbatch", [("SBATCH_IGNORE_PBS", "1")], []),
    ("cli-ignore-pbs", "pbs_select_walltime.sbatch", [], ["--ignore-pbs"]),
    (
        "env-output-error-beat-directives",
        "output_error_patterns.sbatch",
        [("SBATCH_OUTPUT", "env-%j.out"), ("SBATCH_ERROR", "env-%j.err")],
        [],
    ),
    (
        "env-cpus-per-gpu-conflicts-with-directive-cpus-per-task",
        "ntasks_only_with_cpus.sbatch",
        [("SBATCH_GPUS_PER_TASK", "1"), ("SBATCH_CPUS_PER_GPU", "4"), ("SBATCH_MEM_PER_GPU", "20G")],
        [],
    ),
    ("env-invalid-time-refused", "time_minutes_only.sbatch", [("SBATCH_TIMELIMIT", "abc")], []),
    ("cli-export-beats-env-export", "export_none.sbatch", [("SBATCH_EXPORT", "NONE")], ["--export=ALL,X=1"]),
    ("cli-unknown-option-refused", "time_minutes_only.sbatch", [], ["--bogus"]),
    ("cli-ambiguous-prefix-refused", "time_minutes_only.sbatch", [], ["--nod=3"]),
    ("env-exclusive-value-is-the-argument", "no_requeue_signal_plain.sbatch", [("SBATCH_EXCLUSIVE", "yes")], []),
    (
        "env-qos-constraint-wckey-open-mode",
        "time_minutes_only.sbatch",
        [("SBATCH_CONSTRAINT", "gpu"), ("SBATCH_QOS", "high"), ("SBATCH_WCKEY", "wk"), ("SBATCH_OPEN_MODE", "append")],
        [],
    ),
    ("cli-mem-resets-env-mem-per-cpu", "mem_default_unit_mib.sbatch", [("SBATCH_MEM_PER_CPU", "2G")], ["--mem=4G"]),
    (
        "env-unknown-partition-sbatch-accepts",
        "time_minutes_only.sbatch",
        [("SBATCH_ACCOUNT", "Team"), ("SBATCH_PARTITION", "nonexistent")],
        [],
    ),
    (
        "env-gpus-and-gpus-per-node-refused-by-22.05",
        "time_minutes_only.sbatch",
        [("SBATCH_GPUS", "a100:4"), ("SBATCH_GPUS_PER_NODE", "a100:2")],
        ["-N", "2"],
    ),
]


# One SBATCH_* input variable at a time over a plain script: which variables sbatch reads, how
# it reads their values (boolean ones: empty/yes/non-zero set them, 0/no do not) and which
# names it does not know (SBATCH_NODES, SBATCH_CPUS_PER_TASK, SBATCH_TRES_PER_TASK in 22.05).
ENV_SWEEP = [
    ("SBATCH_TIMELIMIT", "UNLIMITED"),
    ("SBATCH_TIMELIMIT", "5:00"),
    ("SBATCH_TIMELIMIT", ""),
    ("SBATCH_GRES", "none"),
    ("SBATCH_REQUEUE", ""),
    ("SBATCH_NO_REQUEUE", "0"),
    ("SBATCH_NO_REQUEUE", "no"),
    ("SBATCH_OVERCOMMIT", "yes"),
    ("SBATCH_OVERCOMMIT", "0"),
    ("SBATCH_NO_KILL", ""),
    ("SBATCH_HINT", "nomultithread"),
    ("SLURM_HINT", "nomultithread"),
    ("SBATCH_DISTRIBUTION", "cyclic"),
    ("SBATCH_GPU_BIND", "closest"),
    ("SBATCH_FOO", "bar"),
    ("SBATCH_MEM_BIND", "local"),
    ("SBATCH_REQ_SWITCH", "1"),
    ("SBATCH_DELAY_BOOT", "5"),
    ("SBATCH_THREAD_SPEC", "1"),
    ("SBATCH_GET_USER_ENV", "1"),
    ("SBATCH_ACCTG_FREQ", "30"),
    ("SBATCH_PROFILE", "task"),
    ("SBATCH_JOB_NAME", ""),
    ("SBATCH_PARTITION", ""),
    ("SBATCH_NODES", "2"),
    ("SBATCH_CPUS_PER_TASK", "4"),
    ("SBATCH_CONTAINER", "/tmp"),
    ("SBATCH_WCKEY", ""),
    ("SBATCH_RESERVATION", "resv1"),
    ("SBATCH_TRES_PER_TASK", "cpu=2"),
    ("SBATCH_SPREAD_JOB", "1"),
    ("SBATCH_USE_MIN_NODES", "1"),
    ("SBATCH_EXPORT_FILE", "/dev/null"),
    ("SBATCH_CORE_SPEC", "1"),
    ("SBATCH_GRES_FLAGS", "enforce-binding"),
    ("SBATCH_CPU_FREQ_REQ", "high"),
    ("SBATCH_GPUS", "2"),
    ("SBATCH_MEM_PER_GPU", "1G"),
    ("SBATCH_CLUSTER_CONSTRAINT", "x"),
    ("SBATCH_THREADS_PER_CORE", "1"),
    ("SBATCH_NETWORK", "ib"),
]
PRECEDENCE_CASES += [("sweep-%s=%s" % (k, v), "time_minutes_only.sbatch", [(k, v)], []) for k, v in ENV_SWEEP]

# sbatch command-line words over a script with directives: short/long/glued/abbreviated forms
# and flags, each overriding or adding to what the script says.
CLI_SWEEP = [
    ["-p", "cpu"],
    ["--partition", "cpu"],
    ["-pcpu"],
    ["--part=cpu"],
    ["-t", "5"],
    ["--time", "5"],
    ["-J", "cli name"],
    ["-N2"],
    ["--nodes=1-3"],
    ["--exclusive"],
    ["--exclusive=user"],
    ["-a", "1-3"],
    ["-d", "singleton"],
    ["-o", "cli-%j.out"],
    ["-e", "cli-%j.err"],
    ["-D", "/tmp"],
    ["-C", "gpu"],
    ["-q", "high"],
    ["-A", "CliAcct"],
    ["-w", "gpu01"],
    ["-x", "gpu02"],
    ["-G", "2"],
    ["-c", "2"],
    ["-n", "3"],
    ["--mem", "1G"],
    ["--mem-per-cpu=1G"],
    ["-k"],
    ["-O"],
    ["-s"],
    ["--requeue"],
    ["--no-requeue"],
    ["--export=NONE"],
    ["--signal=B:USR1@120"],
    ["--comment=from the command line"],
    ["--mail-type=END"],
    ["--gres=gpu:a100:1"],
    ["--tasks=2"],
    ["--ntasks-per-node", "2"],
    ["--cpus-per-t=3"],
    ["--mem-per=1G"],
    ["--bogus-flag"],
    ["-N"],
]
PRECEDENCE_CASES += [("cli-" + " ".join(a), "gres_gpu_untyped_count.sbatch", [], a) for a in CLI_SWEEP]


@pytest.fixture(scope="session")
def precedence_records(slurm_oracle):
    """Slurm's reading for every precedence case. One resolve.py call per case (each has its
    own environment/arguments); they mostly wait on sbatch and slurmctld, so four run at once."""
    from concurrent.futures import ThreadPoolExecutor

    def one(case):
        _, name, env, args = case
        return case[0], slurm_oracle.resolve([F(name)], env=env, sbatch_args=args)[F(name)]

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(one, PRECEDENCE_CASES))


@pytest.mark.parametrize("case", PRECEDENCE_CASES, ids=[c[0] for c in PRECEDENCE_CASES])
def test_precedence_matches_slurm(case, precedence_records, cli):
    """In-process CLI (click runner) to keep 150 cases fast; the corpus run above uses a real
    subprocess."""
    _, name, env, args = case
    script = F(name)
    rec = precedence_records[case[0]]
    assert rec["rejected_by"] != "oracle-unavailable"
    argv = ["inspect", "--json"]
    for k, v in env:
        argv += ["--sbatch-env", "%s=%s" % (k, v)]
    argv.append(str(script))
    if args:
        argv += ["--", *args]
    result = cli(*argv)
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, "expected one JSON line (exit %d): %r" % (result.exit_code, result.output[-1500:])
    ours = json.loads(lines[0])
    run = types.SimpleNamespace(returncode=result.exit_code)
    refused = rec["rejected_by"] == "sbatch"
    assert ours["sbatch_accepts"] is (not refused), "Slurm: %s; inspect sbatch_accepts=%r %s" % (
        "refused by sbatch: %s" % rec["error"] if refused else "sbatch accepts",
        ours["sbatch_accepts"],
        [d.get("message") for d in ours.get("diagnostics", []) if d.get("severity") == "error"],
    )
    assert run.returncode == (1 if refused else 0)
    if refused:
        return
    expected = oracles.oracle_expected_job(rec)
    job = ours.get("job") or {}
    sdir = os.path.dirname(oracles.realpath(script))
    wrong = [
        "%s: Slurm %r, inspect %r" % (k, v, job.get(k))
        for k, v in expected.items()
        if oracles.normalise_field(k, v, sdir) != oracles.normalise_field(k, job.get(k), sdir)
    ]
    assert not wrong, "with env %r and args %r:\n  %s" % (env, args, "\n  ".join(wrong))
    # sbatch's merged option set: every key sbatch set must be in our options (values are
    # compared by the corpus-wide compare.py run; here the set of names catches ignored or
    # invented variables)
    cli_keys = {k for k in (oracles.first_component(rec.get("cli_options")) or {}) if k != "argv"}
    our_keys = {k.lstrip("-") for k in (ours.get("options") or {})}
    assert cli_keys == our_keys, "options set: Slurm %s, inspect %s" % (sorted(cli_keys), sorted(our_keys))


def test_precedence_cases_really_exercise_precedence(slurm_oracle):
    """Guard for the cases above: the environment and the command line do change Slurm's
    reading (otherwise the precedence tests would prove nothing)."""
    script = F("time_minutes_only.sbatch")
    plain = slurm_oracle.resolve([script])[script]
    env_only = slurm_oracle.resolve([script], env=[("SBATCH_TIMELIMIT", "30")])[script]
    both = slurm_oracle.resolve([script], env=[("SBATCH_TIMELIMIT", "30")], sbatch_args=["--time=5"])[script]
    assert plain["job"]["time_limit_seconds"] == 90 * 60
    assert env_only["job"]["time_limit_seconds"] == 30 * 60
    assert both["job"]["time_limit_seconds"] == 5 * 60


# ------------------------------------------------------------------ het jobs: every component
HET_SCRIPTS = [
    p
    for p in ALL_SCRIPTS
    if isinstance(p, Path) and re.search(rb"^#SBATCH[ \t]+(?i:hetjob|packjob)\b", p.read_bytes(), re.M)
]


@pytest.mark.parametrize("script", HET_SCRIPTS, ids=_id)
def test_hetjob_components_match_slurm(script, slurm_oracle, inspect_corpus):
    """compare.py scores component 0 only; here every component's job fields are checked
    against the component Slurm created (what each component inherits from the ones before
    it is sbatch's business, e.g. name, time, account, dependency, but not mail-type)."""
    rec = slurm_oracle[script]
    clis = rec.get("cli_options")
    assert isinstance(clis, list) and len(clis) >= 2, "Slurm did not see a het job"
    ours = inspect_corpus.records[oracles.realpath(script)]
    comps = ours.get("components")
    assert isinstance(comps, list) and len(comps) == len(clis), "Slurm made %d components, inspect reports %s" % (
        len(clis),
        None if comps is None else len(comps),
    )
    sdir = os.path.dirname(oracles.realpath(script))
    het_jobs = rec.get("het_components") or [None] * len(clis)
    wrong = []
    for i, (cli, job) in enumerate(zip(clis, het_jobs)):
        comp_rec = {
            "accepted": rec["accepted"] and job is not None,
            "cli_options": cli,
            "job": job,
            "script_abspath": rec.get("script_abspath"),
            "script": rec["script"],
        }
        expected = oracles.oracle_expected_job(comp_rec)
        got_job = comps[i].get("job") or {}
        for name, want in expected.items():
            got = got_job.get(name)
            if name in ("output", "error"):
                # sbatch's dump shows later components' patterns made absolute (script dir)
                w = oracles.normalise_field("chdir", want, sdir)
                g = oracles.normalise_field("chdir", got, sdir)
            else:
                w = oracles.normalise_field(name, want, sdir)
                g = oracles.normalise_field(name, got, sdir)
            if w != g:
                wrong.append("component %d %s: Slurm %r, inspect %r" % (i, name, want, got))
    assert not wrong, "\n  ".join(["het components disagree with real Slurm:"] + wrong)


# ------------------------------------------------------------------ the process environment
def _job_of(proc):
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stdout[-1000:] + proc.stderr[-1000:]
    return json.loads(lines[0])["job"]


def test_process_environment_ignored_without_inherit_env(slurm_oracle, cli_subprocess):
    """SBATCH_* in slurm2kf's own environment must not change the reading unless asked
    (--inherit-env): the oracle without --env is the reference."""
    script = F("time_minutes_only.sbatch")
    want = slurm_oracle.resolve([script])[script]["job"]
    job = _job_of(
        cli_subprocess("inspect", "--json", script, env={"SBATCH_TIMELIMIT": "30", "SBATCH_PARTITION": "cpu"})
    )
    assert job["time_limit_seconds"] == want["time_limit_seconds"] == 90 * 60
    assert job["partition"] is None


def test_inherit_env_reads_process_environment_like_sbatch(slurm_oracle, cli_subprocess):
    """With --inherit-env, SBATCH_* from the process environment act as in sbatch; an explicit
    --sbatch-env still wins over the inherited value."""
    script = F("time_minutes_only.sbatch")
    rec = slurm_oracle.resolve([script], env=[("SBATCH_TIMELIMIT", "30"), ("SBATCH_PARTITION", "debug")])[script]
    job = _job_of(
        cli_subprocess(
            "inspect",
            "--json",
            "--inherit-env",
            "--sbatch-env",
            "SBATCH_PARTITION=debug",
            script,
            env={"SBATCH_TIMELIMIT": "30", "SBATCH_PARTITION": "cpu"},
        )
    )
    assert rec["job"]["time_limit_seconds"] == 30 * 60 and rec["job"]["partition"] == "debug"
    assert job["time_limit_seconds"] == rec["job"]["time_limit_seconds"]
    assert job["partition"] == rec["job"]["partition"]
