"""Injection end to end: user text in every field that carries it survives as data in YAML and Python.

Scripts are converted with `slurm2kf convert --to yaml` and `--to python` (in-process CLI). For each
hostile value:
  * YAML: loads (safe_load) to the very same string, never adds a key;
  * Python: parses, the value is a string constant, MARKER (planted at the spot where a break-out
    would turn into code) is only ever inside a string literal or a comment;
  * a few pairs run through the Kubeflow oracle: the real SDK executes the Python
    (run_sdk_code.py) and compare_outputs.py says the SDK's TrainJob equals the YAML;
  * pip package specs go into a bash wrapper: running it with a fake `python3` proves every spec
    reaches pip as exactly one argument and the launcher gets its arguments unchanged.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

import strategies as S

M = S.MARKER

# Each value plants MARKER where a quoting bug would turn the text into structure or code.
HOSTILE = [
    f'it\'s a "quoted" {M}',
    f"back\\slash\\\\double\\ {M}\\",
    f"$(touch /tmp/pwned-{M}) `id` ${{HOME}} $HOME",
    f"$(HOME) $(PET_NODE_RANK) $$ $$(X) {M} $",
    f"{M}: injected",
    f"- {M}\n- list",
    f"{{{M}: 1, b: [2]}}",
    f"&anchor {M} *anchor",
    f'!!python/object/apply:os.system ["echo {M}"]',
    f"\"); {M} = __import__('os').system('id'); (\"",
    f"'''{M}'''\"\"\"",
    f"{{__import__('os')}} {M} %s {{0}}",
    f"line1\nline2 {M}: x\n  - y",
    f"cr\r{M} = 1\rcomment",
    f"u2028\u2028{M}: 1\u2029para\x85nel",
    f"tab\t{M}\ttab",
    f"# not a comment {M}",
    f"--- {M}\n...\n%YAML 1.1",
    "yes",
    "0o17",
    "1e3",
    "~",
    "null",
    f"{M} ünïcødé ✓ 𝔘 \u200b",
    f"trailing space {M} ",
    f" leading space {M}",
]
NO_NEWLINE = [v for v in HOSTILE if not any(c in v for c in "\n\r")]


def sbatch_quote(value: str) -> str:
    return S.sbatch_escape(value)


def convert(tmp_path, text: str, name: str = "job.sbatch"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    out = {}
    for to in ("yaml", "python"):
        result = S.run_cli(["convert", str(path), "--to", to, "-o", "-"])
        assert S.cli_result_problem(result) == ""
        assert result.exit_code in (0, 1), (to, result.exit_code, result.output[-3000:])
        out[to] = result.stdout
    docs = S.load_yaml_docs(out["yaml"])
    assert docs, out["yaml"]
    for doc in docs:
        keys = [k for k in S.yaml_keys(doc) if M in str(k)]
        assert not keys, f"user text became YAML keys: {keys}"
    assert S.python_problems(out["python"]) == []
    return path, docs, out["python"]


def yaml_values(docs):
    return [v for d in docs for v in S.string_values(d)]


def base_script(
    *, job_name="plain", env=(), args=(), extra_header=(), pre=(), launcher="torchrun --nproc-per-node=4 train.py"
):
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={sbatch_quote(job_name)}",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gres=gpu:4",
        "#SBATCH --time=01:00:00",
        *extra_header,
        "",
    ]
    lines += list(pre)
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env]
    lines.append(launcher + "".join(" " + shlex.quote(a) for a in args))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_env_value_and_launch_argument(tmp_path, value):
    _path, docs, py = convert(tmp_path, base_script(env=[("USER_VALUE", value)], args=["--tag", value]))
    trainer = docs[0]["spec"]["trainer"]
    env = {e["name"]: e["value"] for e in trainer["env"]}
    # Kubernetes expands $(NAME) in env values and args (`$$` escapes it): what the process sees
    # must be exactly the user's text
    assert S.survives_k8s(value, env["USER_VALUE"]), env["USER_VALUE"]
    assert trainer["args"][-2] == "--tag" and S.survives_k8s(value, trainer["args"][-1]), trainer["args"]
    consts = S.python_string_constants(py)
    assert env["USER_VALUE"] in consts and trainer["args"][-1] in consts


@pytest.mark.parametrize("value", NO_NEWLINE, ids=range(len(NO_NEWLINE)))
def test_job_name_is_kept_as_data(tmp_path, value):
    _path, docs, py = convert(tmp_path, base_script(job_name=value))
    name = docs[0]["metadata"]["name"]
    assert 1 <= len(name) <= 63 and name[0].isalpha() and all(c.islower() or c.isdigit() or c == "-" for c in name), (
        name
    )
    assert value in yaml_values(docs), "the original job name is kept (annotation)"
    assert value in S.python_string_constants(py)


@pytest.mark.parametrize("value", NO_NEWLINE[:12], ids=range(12))
def test_header_values_that_only_reach_annotations_or_findings(tmp_path, value):
    """comment, partition, account, qos, output/error, chdir, constraint, mail-user, reservation."""
    header = [
        f"#SBATCH --comment={sbatch_quote(value)}",
        f"#SBATCH --output={sbatch_quote(value)}",
        f"#SBATCH --error={sbatch_quote(value)}",
        f"#SBATCH --chdir={sbatch_quote(value)}",
        f"#SBATCH --mail-user={sbatch_quote(value)}",
        f"#SBATCH --account={sbatch_quote(value)}",
        f"#SBATCH --qos={sbatch_quote(value)}",
        f"#SBATCH --reservation={sbatch_quote(value)}",
        f"#SBATCH --constraint={sbatch_quote(value)}",
        "#SBATCH --mail-type=ALL",
    ]
    path, docs, py = convert(tmp_path, base_script(extra_header=header))
    from translator.emit import trainjob_yaml
    from translator.pipeline import convert as pipeline_convert

    conv = pipeline_convert(str(path))
    commented = trainjob_yaml.render(list(conv.plans), findings_comment=True)
    assert S.load_yaml_docs(commented) == docs, "the findings comment block changed the documents"


@pytest.mark.parametrize("value", HOSTILE[:14], ids=range(14))
def test_comments_and_module_names_in_the_body(tmp_path, value):
    """Text that only reaches findings (YAML comments, Python comments) never escapes its comment."""
    one_line = value.replace("\n", " ")
    pre = [
        f"# {value}",
        f"module load {shlex.quote(one_line)}",
        f"conda activate {shlex.quote(one_line)}",
        f"cd {shlex.quote(value)}",
        f"source {shlex.quote(value)}/bin/activate",
    ]
    path, docs, py = convert(tmp_path, base_script(pre=pre))
    from translator.emit import trainjob_yaml
    from translator.pipeline import convert as pipeline_convert

    conv = pipeline_convert(str(path))
    commented = trainjob_yaml.render(list(conv.plans), findings_comment=True)
    assert S.load_yaml_docs(commented) == docs


@pytest.mark.parametrize("value", [v for v in NO_NEWLINE if "/" not in v][:10], ids=range(10))
def test_script_file_name(tmp_path, value):
    """The job name defaults to the file name; the source path is kept in an annotation."""
    name = value.replace("/", "_") + ".sbatch"
    text = "#!/bin/bash\n#SBATCH --nodes=1\npython train.py\n"
    path, docs, py = convert(tmp_path, text, name=name)
    values = yaml_values(docs)
    assert any(name in v for v in values), "the file name survives as data"
    assert any(name in c for c in S.python_string_constants(py))


@pytest.mark.parametrize("value", NO_NEWLINE[:10], ids=range(10))
def test_container_image_and_training_script_path(tmp_path, value):
    image = "docker://registry.example.org/team/img:" + value
    launcher = f"srun apptainer exec --nv {shlex.quote(image)} python {shlex.quote(value + '.py')}"
    path, docs, py = convert(tmp_path, base_script(launcher=launcher, args=[value]))
    trainer = docs[0]["spec"]["trainer"]
    assert S.survives_k8s(value, trainer["args"][-1]), trainer["args"]
    assert any(S.survives_k8s(value + ".py", a) for a in trainer.get("command", []) + trainer.get("args", [])), trainer


def _run_wrapper(tmp_path, command, args):
    """Run `command + args` (a bash -c wrapper) with a fake python3 recording its argv."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "argv.log"
    fake = bindir / "python3"
    fake.write_text(
        f'#!/bin/sh\nfor a in "$@"; do printf \'%s\\0\' "$a"; done >> {shlex.quote(str(log))}\n'
        f"printf '\\n--\\n' >> {shlex.quote(str(log))}\nexit 0\n"
    )
    fake.chmod(0o755)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([*command, *args], capture_output=True, env=env, timeout=30, cwd=tmp_path)
    return proc, log.read_bytes().split(b"\n--\n")[0].split(b"\0")[:-1] if log.exists() else []


@pytest.mark.parametrize("value", NO_NEWLINE[:8] + ["pkg==1; rm -rf ~", "x' && touch pwned '"], ids=range(10))
def test_pip_packages_reach_pip_as_single_arguments(tmp_path, value):
    spec = f"pkg-{value}"
    text = base_script(pre=[f"pip install {shlex.quote(spec)} numpy"], launcher="python train.py", args=[value])
    path, docs, py = convert(tmp_path, text)
    trainer = docs[0]["spec"]["trainer"]
    assert trainer["command"][:2] == ["bash", "-c"], trainer["command"]
    # run the wrapper: launcher replaced by `printf` so we see exactly what it would get
    launcher = trainer["args"][2:]
    assert S.survives_k8s(value, launcher[-1]), launcher
    launcher = [S.k8s_effective(a)[0] for a in launcher]  # what the container receives
    script = S.k8s_effective(trainer["args"][0])[0]  # the kubelet expands the script too
    args = [script, trainer["args"][1], "printf", "%s\\0"] + launcher[1:]
    proc, pip_argv = _run_wrapper(tmp_path, trainer["command"], args)
    assert proc.returncode == 0, proc.stderr
    assert spec.encode() in pip_argv and b"numpy" in pip_argv, pip_argv
    assert proc.stdout.split(b"\0")[:-1] == [a.encode() for a in launcher[1:]]
    assert not (tmp_path / "pwned").exists()


def test_sdk_code_runs_and_submits_the_same_trainjob(tmp_path):
    """A few hostile conversions through the real kubeflow==0.5.0 SDK (Kubeflow oracle)."""
    compare = S.KF_ORACLE / "compare_outputs.py"
    assert compare.is_file(), f"Kubeflow oracle missing at {S.KF_ORACLE}"
    picks = [HOSTILE[0], HOSTILE[1], HOSTILE[2], HOSTILE[8], HOSTILE[11], HOSTILE[13]]
    env = dict(os.environ, KF_ORACLE_PYTHON=str(S.VENV_PYTHON))
    failures = []
    for i, value in enumerate(picks):
        case = tmp_path / f"case{i}"
        case.mkdir()
        one_line = value.replace("\n", " ").replace("\r", " ")
        text = base_script(
            job_name=one_line if all(c not in one_line for c in "\u2028\u2029\x85") else "x",
            env=[("USER_VALUE", value)],
            args=["--tag", value],
            pre=[f"pip install {shlex.quote('pkg-' + one_line.split()[0])}"] if i % 2 else [],
        )
        path, docs, py = convert(case, text)
        ypath, ppath = case / "job.yaml", case / "job.py"
        result = S.run_cli(["convert", str(path), "--to", "yaml", "-o", str(ypath)])
        assert result.exit_code in (0, 1), result.output
        result = S.run_cli(["convert", str(path), "--to", "python", "-o", str(ppath)])
        assert result.exit_code in (0, 1), result.output
        proc = subprocess.run(
            [sys.executable, str(compare), str(ypath), str(ppath)], capture_output=True, text=True, timeout=180, env=env
        )
        if proc.returncode != 0 or "equivalent: yes" not in proc.stdout:
            failures.append((value, proc.stdout[-1500:], proc.stderr[-1500:]))
    assert not failures, failures
