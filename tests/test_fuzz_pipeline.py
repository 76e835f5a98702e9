"""Property tests of the whole pipeline (read -> resolve -> plan -> emit) on generated scripts.

Invariants (issue 6):
  * `pipeline.convert` never raises, whatever the bytes;
  * the YAML output loads back (yaml.safe_load) to exactly the plan's values;
  * every emitted TrainJob passes `slurm2kf validate` against the real CRD, and a sample also passes
    the independent Kubeflow oracle (shared/kubeflow/oracle/validate_trainjob.py);
  * the emitted Python always compiles, references no dangerous name, and every plan value is a
    string constant in it; text planted in the script (MARKER) only ever appears inside string
    literals or comments.
"""

from __future__ import annotations

import json
import subprocess
import sys

from hypothesis import example, given
from hypothesis import strategies as st

import strategies as S


def convert(data: bytes, path: str = "job.sbatch"):
    from translator.pipeline import convert as pipeline_convert

    return pipeline_convert(path, data)


def check_outputs(conv, *, findings_comment: bool = False):
    """All output invariants for one conversion; returns the YAML text ('' when nothing to emit)."""
    if conv.file_error is not None:
        assert conv.file_error.code.startswith("R"), conv.file_error
        assert not conv.plans
        return ""
    plans = list(conv.plans)
    if not plans:
        return ""
    for plan in plans:
        for f in plan.findings:
            assert f.severity in ("error", "warning", "info") and f.code[:1] in "ROLPFMV", f
        assert 1 <= len(plan.name) <= 63, plan.name
    if findings_comment:
        from translator.emit import trainjob_yaml

        text = trainjob_yaml.render(plans, findings_comment=True)
    else:
        text = S.render_yaml(plans)
    docs = S.trainjob_docs(S.load_yaml_docs(text), plans)
    for doc, plan in zip(docs, plans):
        assert S.yaml_plan_mismatches(doc, plan) == []
    source = S.render_python(plans)
    assert S.python_problems(source) == []
    assert S.python_plan_problems(source, plans) == []
    return text


@S.fuzz_settings(150)
@given(S.any_script_bytes())
def test_convert_never_raises_and_outputs_are_faithful(data):
    check_outputs(convert(data))


_CRLF_VALUE = S.TaggedScript(  # once found by the generator: a CRLF inside a quoted export value
    text=(
        "#!/bin/bash\n#SBATCH --job-name=Zq9Xu\n#SBATCH --comment=Zq9Xu\n#SBATCH --nodes=1\n"
        "#SBATCH --ntasks-per-node=1\n#SBATCH --time=01:00:00\n\n"
        "export USER_VAR_0='Zq9Xu\r\nZq9Xu'\ntorchrun --nproc-per-node=4 train.py\n"
    ),
    job_name="Zq9Xu",
    env=[("USER_VAR_0", "Zq9Xu\r\nZq9Xu")],
    comment="Zq9Xu",
)


@S.fuzz_settings(100)
@given(S.tagged_scripts())
@example(_CRLF_VALUE)
def test_user_text_is_data_in_both_outputs(tagged):
    """Job name, comment, env values and launch arguments with hostile text stay data."""
    conv = convert(tagged.text.encode("utf-8"), path="tagged.sbatch")
    assert conv.file_error is None and conv.plans, conv.diagnostics
    text = check_outputs(conv, findings_comment=True)
    docs = S.trainjob_docs(S.load_yaml_docs(text), conv.plans)
    consts = S.python_string_constants(S.render_python(conv.plans))
    # A CRLF anywhere is refused as sbatch refuses it (R114), and the conversion goes on with the
    # text dos2unix would give, so a "\r\n" inside a quoted value arrives as "\n".
    crlf = "\r\n" in tagged.text
    if crlf:
        assert any(d.code == "R114" for d in conv.diagnostics), "a CRLF script is refused"

    def as_read(text: str) -> str:
        return text.replace("\r\n", "\n") if crlf else text

    for doc in docs:
        assert not [k for k in S.yaml_keys(doc) if S.MARKER in str(k)], "user text became a YAML key"
        assert tagged.job_name in S.string_values(doc), "the original job name is kept as data"
        trainer = doc["spec"]["trainer"]
        env = {e["name"]: e["value"] for e in trainer.get("env") or []}
        for name, value in tagged.env:
            value = as_read(value)
            # Kubernetes expands $(NAME) in env values, command and args: the emitter must escape it
            assert name in env and S.survives_k8s(value, env[name]), (name, value, env.get(name))
            assert env[name] in consts, f"env value {env[name]!r} is not a constant of the Python"
        words = list(trainer.get("command") or []) + list(trainer.get("args") or [])
        for arg in map(as_read, tagged.args):
            quoted = S.shell_quote(arg)  # as written in the script, when the body is kept as shell code
            assert any(S.survives_k8s(arg, w) or S.k8s_effective(w)[0].find(quoted) >= 0 for w in words), (
                f"launch argument {arg!r} lost: {words!r}"
            )


@S.fuzz_settings(40)
@given(data=S.any_script_bytes())
def test_every_emitted_trainjob_passes_slurm2kf_validate(data, tmp_path_factory):
    conv = convert(data)
    if conv.file_error is not None or not conv.plans:
        return
    out = tmp_path_factory.mktemp("validate") / "job.yaml"
    out.write_text(S.render_yaml(conv.plans), encoding="utf-8")
    result = S.run_cli(["validate", str(out), "--crd", str(S.CRD)])
    assert S.cli_result_problem(result) == ""
    assert result.exit_code == 0, result.output


def test_sample_passes_the_kubeflow_oracle(tmp_path):
    """A sample of generated conversions through the independent validator (real CRD, CEL, webhook rules)."""
    assert (S.KF_ORACLE / "validate_trainjob.py").is_file(), f"Kubeflow oracle missing at {S.KF_ORACLE}"
    written = []

    @S.fuzz_settings(60, database=None)
    @given(st.one_of(S.any_script_bytes(), S.tagged_scripts().map(lambda t: t.text.encode())))
    def collect(data):
        conv = convert(data)
        if conv.file_error is None and conv.plans:
            path = tmp_path / f"gen{len(written):03d}.yaml"
            path.write_text(S.render_yaml(conv.plans), encoding="utf-8")
            (tmp_path / f"gen{len(written):03d}.sbatch").write_bytes(data)
            written.append(path)

    collect()
    assert len(written) >= 10, "too few generated scripts converted to judge the emitter"
    proc = subprocess.run(
        [sys.executable, str(S.KF_ORACLE / "validate_trainjob.py"), *map(str, written)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    invalid = []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if not entry.get("valid"):
                invalid.append((entry.get("file"), entry.get("errors")))
    assert not invalid, f"oracle rejects emitted TrainJobs (inputs kept next to them in {tmp_path}): {invalid[:5]}"
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
