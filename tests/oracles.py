"""Helpers to call the shared, independent test oracles from the tests.

Two families of oracles live in the shared directory (env ``SLURM2KF_SHARED``, default
``<repo>/../shared``). They are test instruments only: product code never imports them.

Slurm (``<shared>/slurm-oracle``, real Slurm 22.05 on 127.0.0.1)
    * :func:`resolve_scripts` runs ``resolve.py`` ONCE over many scripts and returns
      :class:`OracleRecords` (a mapping realpath -> resolve.py record). ``SLURM_ORACLE_STATE``
      is taken from the environment (``./test.sh`` sets it and starts the oracle).
    * :func:`compare_with_oracle` runs the shared ``compare.py --json`` on an oracle JSONL
      file and a translator JSONL file and returns its JSON document.
    * :func:`oracle_expected_job` gives, for one oracle record, the contract job fields the
      script sets explicitly and the value real Slurm resolved for each (normalised).

Kubeflow (``<shared>/kubeflow/oracle``, the real CRD and the real ``kubeflow==0.5.0`` SDK)
    * :func:`validate_trainjob` - would a Trainer v2.3 cluster accept these TrainJob documents?
    * :func:`run_sdk_code` - run generated SDK Python against a fake cluster, capture the
      TrainJob(s) it submits. Uses our own venv's interpreter (``KF_ORACLE_PYTHON =
      sys.executable``), which has ``kubeflow==0.5.0``.
    * :func:`compare_outputs` - are a YAML file and an SDK Python file the same TrainJob?
    The tools re-exec themselves into their own venv (``/tmp/kf-oracle-venv``), so they are
    started with plain ``python3``.

Every helper raises :class:`OracleMissing` (an ``AssertionError``, so a test using it FAILS,
never skips) when the shared directory or the oracle is not there or not answering.

Our own CLI:
    * :func:`slurm2kf_argv` - argv prefix that starts ``slurm2kf`` as a subprocess;
    * :func:`run_slurm2kf` - run it and return the ``CompletedProcess``;
    * :func:`inspect_json` - ``slurm2kf inspect --json`` over many scripts in ONE call,
      returning records keyed by realpath.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union
from collections.abc import Iterable, Iterator, Sequence

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "sbatch"

PathLike = Union[str, "os.PathLike[str]"]


class OracleMissing(AssertionError):
    """The shared data or an oracle is missing or down. An AssertionError on purpose: a test
    that needs an oracle fails (it must not be skipped) when the oracle is unavailable."""


# --------------------------------------------------------------------------- shared directory
def shared_dir() -> Path:
    """The shared directory: ``$SLURM2KF_SHARED``, else ``<repo>/../shared``.

    Raises :class:`OracleMissing` with a message saying what to set when it does not exist."""
    raw = os.environ.get("SLURM2KF_SHARED")
    path = Path(raw) if raw else REPO.parent / "shared"
    if not path.is_dir():
        how = "SLURM2KF_SHARED=%s" % raw if raw else "the default <repo>/../shared = %s" % path
        raise OracleMissing(
            "shared test data not found (%s does not exist). Set SLURM2KF_SHARED to the directory "
            "holding slurm-oracle/ and kubeflow/oracle/, or run ./test.sh." % how
        )
    return path


def slurm_oracle_dir(shared: Path | None = None) -> Path:
    d = (shared or shared_dir()) / "slurm-oracle"
    if not (d / "resolve.py").is_file():
        raise OracleMissing("%s/resolve.py not found: the Slurm oracle is missing" % d)
    return d


def kubeflow_oracle_dir(shared: Path | None = None) -> Path:
    d = (shared or shared_dir()) / "kubeflow" / "oracle"
    if not (d / "validate_trainjob.py").is_file():
        raise OracleMissing("%s/validate_trainjob.py not found: the Kubeflow oracle is missing" % d)
    return d


def _system_python() -> str:
    """The interpreter for the shared tools (standard library only; the Kubeflow tools
    re-exec into their own venv). Plain python3, not our venv, mirrors their README."""
    return shutil.which("python3") or sys.executable


def realpath(p: PathLike) -> str:
    return os.path.realpath(os.fspath(p))


# --------------------------------------------------------------------------- Slurm oracle
class OracleRecords(Mapping):
    """resolve.py records by script realpath. ``records[path]`` accepts any spelling of the
    path (relative, absolute, Path); ``jsonl`` is the raw resolve.py output (for compare.py)."""

    def __init__(self, records: Iterable[dict], jsonl: str):
        self._by: dict[str, dict] = {}
        for rec in records:
            key = rec.get("script_abspath") or realpath(rec["script"])
            self._by[key] = rec
        self.jsonl = jsonl

    def __getitem__(self, path: PathLike) -> dict:
        return self._by[realpath(path)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by)

    def __len__(self) -> int:
        return len(self._by)

    def write_jsonl(self, path: PathLike) -> Path:
        Path(path).write_text(self.jsonl, encoding="utf-8")
        return Path(path)


def resolve_scripts(
    scripts: Sequence[PathLike],
    env: Sequence[tuple[str, str]] = (),
    sbatch_args: Sequence[str] = (),
    timeout: float = 600,
) -> OracleRecords:
    """Ask real Slurm how it reads ``scripts``: ONE ``resolve.py`` call for all of them.

    ``env`` -> ``--env KEY=VALUE`` (e.g. ``SBATCH_PARTITION``), ``sbatch_args`` ->
    ``--sbatch-arg=ARG`` (extra sbatch command-line words, before the script). The oracle's
    ``SLURM_ORACLE_STATE`` comes from our environment (``./test.sh`` exports it). Permissive
    mode (``--adapt``) is never used: it reconfigures the shared controller.

    Each record has ``accepted``, ``rejected_by`` (``"sbatch"`` / ``"slurmctld"`` / None),
    ``error``, ``cli_options`` (sbatch's merged options: a dict, or a list of dicts for a
    het job), ``job`` (normalised scontrol view) and more; see the oracle's README.
    Raises :class:`OracleMissing` when the oracle does not answer."""
    odir = slurm_oracle_dir()
    if not scripts:
        return OracleRecords([], "")
    argv = [_system_python(), str(odir / "resolve.py")]
    for k, v in env:
        argv.append("--env=%s=%s" % (k, v))
    for a in sbatch_args:
        argv.append("--sbatch-arg=%s" % a)
    argv += [os.path.abspath(os.fspath(s)) for s in scripts]
    proc = subprocess.run(argv, capture_output=True, timeout=timeout, env=dict(os.environ))
    # JSON Lines: records end at `\n` only (U+2028 or NEL inside a JSON string are not line breaks), so
    # no universal-newline text mode and no str.splitlines()
    proc.stdout = proc.stdout.decode("utf-8", "surrogateescape")
    proc.stderr = proc.stderr.decode("utf-8", "replace")
    records = []
    for line in proc.stdout.split("\n"):
        line = line.strip()
        if line:
            records.append(json.loads(line))
    down = [r for r in records if r.get("rejected_by") in ("oracle-unavailable", "resolve.py")]
    if proc.returncode == 2 or down or len(records) != len(scripts):
        detail = (down[0].get("error") if down else proc.stderr.strip()[-800:]) or "no output"
        raise OracleMissing(
            "the Slurm oracle did not answer (resolve.py rc=%d, %d/%d records): %s\n"
            "Start it with ./test.sh, or: SLURM_ORACLE_STATE=<dir> %s/setup.sh and export the same "
            "SLURM_ORACLE_STATE (now %r)."
            % (proc.returncode, len(records), len(scripts), detail, odir, os.environ.get("SLURM_ORACLE_STATE"))
        )
    return OracleRecords(records, proc.stdout)


def compare_with_oracle(oracle_jsonl: PathLike, translator_jsonl: PathLike, base: PathLike | None = None) -> dict:
    """Run the shared ``compare.py ORACLE TRANSLATOR --json`` and return its document:
    ``totals`` (fields_agree/fields_compared/rejections_agree/rejections_total...),
    ``disagreements`` (script, field, kind, oracle, translator), ``rejection_disagreements``,
    ``only_oracle``/``only_translator`` (unmatched paths) and ``fidelity_line``."""
    odir = slurm_oracle_dir()
    argv = [
        _system_python(),
        str(odir / "compare.py"),
        os.fspath(oracle_jsonl),
        os.fspath(translator_jsonl),
        "--json",
        "--max-list",
        "100000",
    ]
    if base is not None:
        argv += ["--base", os.fspath(base)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError("compare.py failed (rc=%d): %s" % (proc.returncode, proc.stderr[-2000:]))
    return json.loads(proc.stdout)


def first_component(value):
    """cli_options / job views are a list for het jobs: component 0 is what the contract's
    ``job``/``options`` describe."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


# ---- expected job fields from an oracle record (written from Slurm semantics, independent of
# ---- compare.py; used for the per-script assertions that read well in a failure report)
_MEM_FACTOR = {"": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}


def mem_to_mib(value) -> int | None:
    """sbatch memory text -> MiB: default unit MiB, binary suffixes, K rounded up, ``0?`` = 0."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"(\d+)([KMGTP]?)B?\??", str(value).strip(), re.I)
    if not m:
        return None
    n, unit = int(m.group(1)), m.group(2).upper()
    return -(-n // 1024) if unit == "K" else n * _MEM_FACTOR[unit]


def time_to_seconds(value) -> int | None:
    """sbatch time text -> seconds rounded up to whole minutes; unlimited forms -> 0."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    s = str(value).strip()
    if s.upper() in ("UNLIMITED", "INFINITE", "-1", "0"):
        return 0
    days = 0
    if "-" in s:
        d, s = s.split("-", 1)
        days = int(d)
        parts = [int(x) for x in s.split(":")]
        h, mi, se = (parts + [0, 0])[:3]
    else:
        parts = [int(x) for x in s.split(":")]
        h, mi, se = {1: (0, parts[0], 0), 2: (0, *parts), 3: tuple(parts)}[len(parts)] if len(parts) <= 3 else (0, 0, 0)
    secs = ((days * 24 + h) * 60 + mi) * 60 + se
    return int(math.ceil(secs / 60.0)) * 60


def gpu_request(value) -> tuple[str | None, int] | None:
    """``--gpus``/``--gpus-per-node``/``--gpus-per-task`` value ``[gpu:][type:]N`` -> (type, N)."""
    if value is None:
        return None
    parts = str(value).strip().split(",")[0].split(":")
    if len(parts) > 1 and parts[0] == "gpu":
        parts = parts[1:]
    if re.fullmatch(r"\d+", parts[-1]):
        return (":".join(parts[:-1]) or None, int(parts[-1]))
    return (":".join(parts) or None, 1)


def gres_gpu_of(value) -> tuple[str | None, int] | None:
    """The first ``gpu`` entry of a ``--gres`` list (``gres:`` prefix of the cli dump allowed):
    ``gpu`` -> (None, 1), ``gpu:a100`` -> ('a100', 1), ``gpu:a100:4`` -> ('a100', 4)."""
    if value is None:
        return None
    for item in str(value).split(","):
        parts = item.strip().split(":")
        if parts and parts[0] == "gres":
            parts = parts[1:]
        if not parts or parts[0] != "gpu":
            continue
        rest = parts[1:]
        if rest and re.fullmatch(r"\d+", rest[-1]):
            return (":".join(rest[:-1]) or None, int(rest[-1]))
        return (":".join(rest) or None, 1)
    return None


def array_indexes(spec) -> tuple[frozenset | None, int | None]:
    """``1-7:2,9%3`` -> ({1,3,5,7,9}, 3). Brackets are tolerated as by Slurm."""
    if spec is None:
        return None, None
    s = str(spec).strip()
    throttle = None
    if "%" in s:
        # as Slurm: the number after the FIRST % is the throttle; text after that number
        # still belongs to the index list ("1-3:2%1,5" = {1,3,5} with throttle 1)
        s, t = s.split("%", 1)
        m = re.match(r"\d*", t)
        throttle = int(m.group(0)) if m.group(0) else None
        s += t[m.end() :]
    s = s.strip("[]")
    out = set()
    for tok in s.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", tok.strip())
        if not m:
            return frozenset({tok}), throttle
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) else a
        step = int(m.group(3) or 1)
        if step <= 0 or (b - a) // step > 10**6:
            return frozenset({("unexpanded", tok.strip())}), throttle
        out.update(range(a, b + 1, step))
    return frozenset(out), throttle


def dependency_items(spec) -> tuple[str, tuple[str, ...]] | None:
    """``afterany:1:2,singleton`` -> (',', ('afterany:1', 'afterany:2', 'singleton'))."""
    if spec is None:
        return None
    s = re.sub(r"\((unfulfilled|failed|satisfied)\)", "", str(spec))
    sep = "?" if "?" in s else ","
    items = []
    for clause in filter(None, (c.strip() for c in s.split(sep))):
        typ, _, ids = clause.partition(":")
        items += ["%s:%s" % (typ.lower(), i) for i in ids.split(":")] if ids else [typ.lower()]
    return sep, tuple(sorted(items))


_SIGNALS = {
    "10": "USR1",
    "12": "USR2",
    "15": "TERM",
    "1": "HUP",
    "2": "INT",
    "9": "KILL",
    "14": "ALRM",
    "3": "QUIT",
    "24": "XCPU",
}


def signal_parts(spec) -> tuple[str, str, int] | None:
    """``B:USR1@300`` -> ('B', 'USR1', 300); ``SIGUSR2`` -> ('', 'USR2', 60)."""
    if spec is None:
        return None
    s = str(spec).strip()
    flags = ""
    m = re.fullmatch(r"([RBrb]{1,2}):(.*)", s)
    if m:
        flags, s = "".join(sorted(m.group(1).upper())), m.group(2)
    sig, _, secs = s.partition("@")
    sig = sig.strip().upper()
    sig = sig[3:] if sig.startswith("SIG") else sig
    return flags, _SIGNALS.get(sig, sig), int(secs) if secs else 60


def export_items(spec) -> tuple[str, ...] | None:
    if spec is None:
        return None
    items = []
    for it in (x.strip() for x in str(spec).split(",")):
        if it:
            items.append(it.upper() if it.upper() in ("ALL", "NONE", "NIL") else it)
    return tuple(sorted(items))


def truthy(v) -> bool | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    return str(v).strip().lower() in (
        "",
        "1",
        "true",
        "yes",
        "set",
        "exclusive",
        "requeue",
        "user",
        "mcs",
        "topo",
        "oversubscribe",
    )


def normalise_field(name: str, value, script_dir: str):
    """Bring one contract job field to a comparable form (both oracle and translator side)."""
    if value is None:
        return None
    if name in (
        "nodes_min",
        "nodes_max",
        "ntasks",
        "ntasks_per_node",
        "cpus_per_task",
        "gpus_per_node",
        "gpus_per_task",
        "gpus_total",
        "array_throttle",
    ):
        try:
            return int(value)
        except (TypeError, ValueError):
            return ("not-an-int", value)
    if name in ("mem_per_node_mb", "mem_per_cpu_mb", "mem_per_gpu_mb"):
        return mem_to_mib(value)
    if name == "time_limit_seconds":
        return time_to_seconds(value)
    if name == "array":
        return array_indexes(value)[0]
    if name == "dependency":
        return dependency_items(value)
    if name == "constraint":
        return re.sub(r"[\s'\"]", "", str(value)).replace(",", "&")
    if name == "signal":
        return signal_parts(value)
    if name == "export":
        return export_items(value)
    if name == "chdir":
        s = str(value)
        return os.path.normpath(s if s.startswith("/") else os.path.join(script_dir, s))
    if name == "account":
        return str(value).lower()
    if name in ("exclusive", "requeue"):
        return truthy(value)
    return str(value)


def oracle_expected_job(rec: dict) -> dict[str, Any]:
    """The contract ``job`` fields this script sets explicitly, with real Slurm's value.

    "Explicitly" = sbatch put the matching option in ``cli_options`` (component 0): sbatch has
    already resolved short names, aliases, prefixes, ``SBATCH_*`` and command-line args there.
    Values come from the scontrol view of the accepted job where scontrol shows them, else from
    sbatch's own parse (``cli_options``): output/error/signal/export/qos are only there.
    Rejected-by-sbatch records have no expectations (empty dict). ``job_name`` is always
    expected (the default is the script's file name)."""
    cli = first_component(rec.get("cli_options"))
    if cli is None:
        return {}
    job = first_component(rec.get("job")) if rec.get("accepted") else None
    gpus = (job or {}).get("gpus") or {}
    exp: dict[str, Any] = {}

    def take(field_name, cli_key, job_key=None, conv=lambda v: v):
        if cli_key in cli:
            if job is not None and job_key is not None:
                exp[field_name] = job.get(job_key)
            else:
                exp[field_name] = conv(cli[cli_key])

    script = rec.get("script_abspath") or rec.get("script")
    if "job-name" in cli:
        exp["job_name"] = job["job_name"] if job else cli["job-name"]
    else:
        exp["job_name"] = job["job_name"] if job else os.path.basename(script)
    take("partition", "partition", "partition")
    take("account", "account", "account")
    take("qos", "qos")  # no accounting: slurmctld drops the QOS
    if "nodes" in cli:
        if job is not None:
            exp["nodes_min"], exp["nodes_max"] = job.get("num_nodes_min"), job.get("num_nodes_max")
        else:
            a, _, b = str(cli["nodes"]).partition("-")
            exp["nodes_min"], exp["nodes_max"] = int(a), int(b or a)
    take("ntasks", "ntasks", "num_tasks", int)
    take("ntasks_per_node", "ntasks-per-node", "ntasks_per_node", int)
    take("cpus_per_task", "cpus-per-task", "cpus_per_task", int)
    gres_gpu = gres_gpu_of(cli.get("gres"))
    if "gpus-per-node" in cli or gres_gpu:
        exp["gpus_per_node"] = (
            gpus.get("per_node")
            if job
            else (gpu_request(cli["gpus-per-node"]) if "gpus-per-node" in cli else gres_gpu)[1]
        )
    if "gpus-per-task" in cli:
        exp["gpus_per_task"] = gpus.get("per_task") if job else gpu_request(cli["gpus-per-task"])[1]
    if "gpus" in cli:
        exp["gpus_total"] = gpus.get("per_job") if job else gpu_request(cli["gpus"])[1]
    if gres_gpu or any(k in cli for k in ("gpus", "gpus-per-node", "gpus-per-task")):
        if job:
            exp["gpu_type"] = gpus.get("type")
        else:
            for k in ("gpus", "gpus-per-node", "gpus-per-task"):
                if k in cli:
                    exp["gpu_type"] = gpu_request(cli[k])[0]
            if "gpu_type" not in exp:
                exp["gpu_type"] = gres_gpu[0]
    take("mem_per_node_mb", "mem", "mem_per_node_mb", mem_to_mib)
    take("mem_per_cpu_mb", "mem-per-cpu", "mem_per_cpu_mb", mem_to_mib)
    if "mem-per-gpu" in cli:
        exp["mem_per_gpu_mb"] = gpus.get("mem_per_gpu") if job else mem_to_mib(cli["mem-per-gpu"])
    if "time" in cli:
        exp["time_limit_seconds"] = (job.get("time_limit_seconds") or 0) if job else time_to_seconds(cli["time"])
    if "array" in cli:
        if job:
            exp["array"], exp["array_throttle"] = job.get("array_spec"), job.get("array_task_throttle")
        else:
            exp["array"], exp["array_throttle"] = cli["array"], array_indexes(cli["array"])[1]
    take("dependency", "dependency", "dependency_spec")
    if "exclusive" in cli:
        exp["exclusive"] = bool(job.get("exclusive")) if job else True
    take("constraint", "constraint", "features")
    take("output", "output")  # raw pattern: only sbatch's parse has it
    take("error", "error")
    take("chdir", "chdir", "work_dir")
    if "requeue" in cli or "no-requeue" in cli:
        exp["requeue"] = bool(job.get("requeue")) if job else "requeue" in cli
    take("signal", "signal")
    take("export", "export")
    take("comment", "comment", "comment")
    return exp


# --------------------------------------------------------------------------- Kubeflow oracle
@dataclass
class ValidationResult:
    returncode: int
    documents: list[dict] = field(default_factory=list)  # one JSON line per TrainJob document
    summary: str = ""  # the final "valid: N/M" line
    stderr: str = ""

    @property
    def all_valid(self) -> bool:
        return self.returncode == 0 and bool(self.documents) and all(d["valid"] for d in self.documents)


def validate_trainjob(
    paths_or_text: Sequence[PathLike] | str,
    strict_warnings: bool = False,
    runtimes: Sequence[PathLike] = (),
    namespace: str | None = None,
    timeout: float = 300,
) -> ValidationResult:
    """Run ``validate_trainjob.py`` (the real Trainer v2.3 CRD schema, CEL rules, webhook and
    pod rules). Give file paths, or YAML text (sent on stdin as ``-``).

    Returns :class:`ValidationResult`: ``documents`` are the tool's JSON lines
    (``file, index, name, valid, errors, warnings``); ``all_valid`` is True when every
    TrainJob document is valid (rc 0). ``strict_warnings`` counts warnings as errors."""
    tool = kubeflow_oracle_dir() / "validate_trainjob.py"
    argv = [_system_python(), str(tool)]
    stdin = None
    if isinstance(paths_or_text, str):
        argv.append("-")
        stdin = paths_or_text
    else:
        argv += [os.fspath(p) for p in paths_or_text]
    if strict_warnings:
        argv.append("--strict-warnings")
    for r in runtimes:
        argv += ["--runtimes", os.fspath(r)]
    if namespace:
        argv += ["--namespace", namespace]
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout)
    docs, summary = [], ""
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            docs.append(json.loads(line))
        elif line.startswith("valid:"):
            summary = line
    if not summary:
        raise OracleMissing("validate_trainjob.py did not run (rc=%d): %s" % (proc.returncode, proc.stderr[-2000:]))
    return ValidationResult(proc.returncode, docs, summary, proc.stderr)


@dataclass
class SdkRun:
    returncode: int  # 0 ok, 1 raised, 2 never submitted, 3 unserved API call, 4 harness, 5 invalid
    trainjobs: list[dict]  # the request bodies the SDK POSTed (exact wire JSON)
    stderr: str  # the script's own output and the tool's [kf-oracle] log

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_sdk_code(
    paths: Sequence[PathLike],
    validate: bool = False,
    stop_after_submit: bool = False,
    namespace: str | None = None,
    script_args: Sequence[str] = (),
    timeout: float = 300,
) -> SdkRun:
    """Run generated SDK Python files with ``run_sdk_code.py --json`` on the real
    ``kubeflow==0.5.0`` against a fake cluster and capture what they submit.

    The code runs with our venv's interpreter (``KF_ORACLE_PYTHON=sys.executable``; the venv
    has kubeflow==0.5.0). ``validate`` also validates the captured TrainJobs (rc 5 if invalid);
    ``stop_after_submit`` tolerates ``wait_for_job_status()`` etc. after the submit.
    Returns :class:`SdkRun` with the captured bodies of all files, in order."""
    tool = kubeflow_oracle_dir() / "run_sdk_code.py"
    argv = [_system_python(), str(tool), "--json", "-j", "2"]
    if validate:
        argv.append("--validate")
    if stop_after_submit:
        argv.append("--stop-after-submit")
    if namespace:
        argv += ["--namespace", namespace]
    argv += [os.path.abspath(os.fspath(p)) for p in paths]
    if script_args:
        argv += ["--", *script_args]
    env = dict(os.environ, KF_ORACLE_PYTHON=sys.executable)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    try:
        # raw_decode: with --validate the tool (as of this writing) prints the list twice; the
        # first document is the captured list.
        text = proc.stdout.strip()
        bodies = json.JSONDecoder().raw_decode(text)[0] if text else []
    except json.JSONDecodeError:
        raise OracleMissing("run_sdk_code.py printed no JSON (rc=%d): %s" % (proc.returncode, proc.stderr[-2000:]))
    if proc.returncode == 4:
        raise OracleMissing("run_sdk_code.py harness error: %s" % proc.stderr[-2000:])
    return SdkRun(proc.returncode, bodies, proc.stderr)


@dataclass
class OutputComparison:
    equivalent: bool
    returncode: int
    report: str  # the tool's diff text; ends with "equivalent: yes|no"


def compare_outputs(
    yaml_path: PathLike,
    py_path: PathLike,
    apply_defaults: bool = False,
    validate: bool = False,
    stop_after_submit: bool = False,
    timeout: float = 300,
) -> OutputComparison:
    """Run ``compare_outputs.py YAML PY``: is the TrainJob in the YAML the same one the SDK
    code submits? ``equivalent`` is the tool's verdict; ``report`` lists each difference."""
    tool = kubeflow_oracle_dir() / "compare_outputs.py"
    argv = [_system_python(), str(tool), os.fspath(yaml_path), os.fspath(py_path)]
    if apply_defaults:
        argv.append("--apply-defaults")
    if validate:
        argv.append("--validate")
    if stop_after_submit:
        argv.append("--stop-after-submit")
    env = dict(os.environ, KF_ORACLE_PYTHON=sys.executable)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    m = re.search(r"^equivalent: (yes|no)\s*$", proc.stdout, re.M)
    if not m:
        raise OracleMissing(
            "compare_outputs.py gave no verdict (rc=%d): %s" % (proc.returncode, (proc.stdout + proc.stderr)[-2000:])
        )
    return OutputComparison(m.group(1) == "yes", proc.returncode, proc.stdout)


# --------------------------------------------------------------------------- our CLI
def slurm2kf_argv() -> list[str]:
    """argv prefix that runs our CLI as a separate process: the venv's ``slurm2kf`` console
    script when installed next to this interpreter, else ``python -m translator``."""
    exe = Path(sys.executable).parent / "slurm2kf"
    if exe.is_file() and os.access(exe, os.X_OK):
        return [str(exe)]
    return [sys.executable, "-m", "translator"]


def run_slurm2kf(
    *args: str, input: str | None = None, env: Mapping | None = None, cwd: PathLike | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run ``slurm2kf ARGS...`` as a subprocess (text mode) and return the CompletedProcess.
    ``env`` entries are added to a copy of our environment."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        slurm2kf_argv() + [str(a) for a in args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=os.fspath(cwd) if cwd else None,
    )


@dataclass
class InspectRun:
    returncode: int
    records: dict[str, dict]  # realpath -> one `inspect --json` object
    jsonl: str  # raw stdout (what compare.py reads)
    stderr: str

    def __getitem__(self, path: PathLike) -> dict:
        return self.records[realpath(path)]


def inspect_json(
    scripts: Sequence[PathLike],
    sbatch_env: Sequence[tuple[str, str]] = (),
    sbatch_args: Sequence[str] = (),
    timeout: float = 600,
) -> InspectRun:
    """``slurm2kf inspect --json [--sbatch-env K=V]... SCRIPTS... [-- SBATCH_ARGS...]`` in ONE
    subprocess. Records are keyed by the realpath of their ``path``. Lines that are not JSON
    objects are an AssertionError (the contract is one JSON object per script per line)."""
    args: list[str] = ["inspect", "--json"]
    for k, v in sbatch_env:
        args += ["--sbatch-env", "%s=%s" % (k, v)]
    args += [os.path.abspath(os.fspath(s)) for s in scripts]
    if sbatch_args:
        args += ["--", *sbatch_args]
    proc = run_slurm2kf(*args, timeout=timeout)
    records: dict[str, dict] = {}
    bad = []
    for line in proc.stdout.split("\n"):  # JSON Lines end at `\n` only
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            bad.append(line)
            continue
        if not isinstance(obj, dict) or "path" not in obj:
            bad.append(line)
            continue
        records[realpath(obj["path"])] = obj
    assert not bad, "slurm2kf inspect --json printed non-contract lines (rc=%d): %r\nstderr: %s" % (
        proc.returncode,
        bad[:3],
        proc.stderr[-2000:],
    )
    return InspectRun(proc.returncode, records, proc.stdout, proc.stderr)


def fixture_scripts() -> list[Path]:
    """Every job script of our corpus (tests/fixtures/sbatch/*.sbatch|*.sh), sorted."""
    return sorted(p for p in FIXTURES.iterdir() if p.suffix in (".sbatch", ".sh") and p.is_file())


# Scripts whose bytes cannot carry a "# fixture:" header line (or that must not be committed as
# text). The session writes them to a temporary directory (conftest: ``edge_scripts_dir``) and
# they go through the oracles like every fixture. name -> (bytes, what it tests, verdict).
EDGE_SCRIPTS = {
    "empty_file_refused.sbatch": (b"", "an empty file (sbatch: batch script is empty)", "sbatch-refuses"),
    "whitespace_only_refused.sbatch": (b"  \n\n\t\n", "blanks and tabs only", "sbatch-refuses"),
    "cr_only_line_endings.sbatch": (
        b"#!/bin/bash\r#SBATCH -N 2\r#SBATCH -t 10\rhostname\r",
        "classic-Mac CR line breaks: sbatch splits on LF only, so the whole file is the shebang "
        "line and no directive applies",
        "accepted",
    ),
    "non_utf8_body_bytes.sbatch": (
        b"#!/bin/bash\n#SBATCH -N 2 -t 10\nprintf '\xff\xfe binary \x80\x81'\n",
        "bytes that are not UTF-8 in the body; the directives still apply",
        "accepted",
    ),
    "lone_cr_inside_directive.sbatch": (
        b"#!/bin/bash\n#SBATCH -N\r2\n#SBATCH -t 10\nsrun hostname\n",
        "a carriage return NOT followed by a line feed is just a blank for the directive "
        "tokenizer (-N<CR>2 = -N 2), and no CRLF means no refusal",
        "accepted",
    ),
    "huge_10mb_script.sbatch": (
        b"#!/bin/bash\n#SBATCH -N 1\n#SBATCH -t 10\n" + b"echo 'a long generated body line'\n" * 350000,
        "a 10 MB script: sbatch accepts it, the controller refuses scripts over 4 MiB (max_script_size)",
        "slurmctld-rejects",
    ),
}


def write_edge_scripts(directory: PathLike) -> dict[str, Path]:
    """Write :data:`EDGE_SCRIPTS` into ``directory``; returns name -> path."""
    out = {}
    for name, (data, _what, _verdict) in EDGE_SCRIPTS.items():
        path = Path(directory) / name
        path.write_bytes(data)
        out[name] = path
    return out


_EXPECT_RE = re.compile(rb"^# expect: (accepted|sbatch-refuses|slurmctld-rejects)\b", re.M)
_FIXTURE_RE = re.compile(rb"^# fixture: (.+?)\r?$", re.M)


def fixture_header(path: PathLike) -> tuple[str | None, str | None]:
    """(what the fixture tests, expected verdict) from its ``# fixture:`` and ``# expect:``
    header lines; the verdict is ``accepted``, ``sbatch-refuses`` or ``slurmctld-rejects``."""
    data = Path(path).read_bytes()[:4096]
    f = _FIXTURE_RE.search(data)
    e = _EXPECT_RE.search(data)
    return (f.group(1).decode("utf-8", "replace") if f else None, e.group(1).decode() if e else None)
