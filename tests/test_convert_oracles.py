"""Every golden conversion checked by the independent Kubeflow oracles (../shared/kubeflow/oracle):

* the YAML validates against the real TrainJob CRD, its CEL rules and the webhook rules of v2.3.0;
* the generated Python runs on the real kubeflow==0.5.0 SDK (fake cluster) and submits a TrainJob
  equal to the YAML (compare_outputs.py).
Missing oracles make these tests fail, never skip.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

import kf_helpers as K

FIXTURES = Path(__file__).parent / "fixtures" / "convert"
CASES = sorted(FIXTURES.glob("*/*.sbatch"))


def _settings_for(case: Path):
    from translator.pipeline import ConvertSettings

    args = ""
    for line in case.with_name(case.stem + ".expected.yaml").read_text().splitlines():
        if line.startswith("# convert-args:"):
            args = line.split(":", 1)[1]
    words = shlex.split(args)
    kw = {}
    for opt, key in (("--array-mode", "array_mode"), ("--runtime", "runtime"), ("--image", "image")):
        if opt in words:
            kw[key] = words[words.index(opt) + 1]
    return ConvertSettings(**kw)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, monkeypatch_module=None):
    import os

    from translator.pipeline import convert

    tmp = tmp_path_factory.mktemp("convert-oracles")
    out = []
    cwd = os.getcwd()
    os.chdir(FIXTURES)
    try:
        for case in CASES:
            rel = f"{case.parent.name}/{case.name}"
            plans = convert(rel, settings=_settings_for(case)).plans
            assert plans, rel
            out.append((rel, *K.write_outputs(tmp, f"{case.parent.name}__{case.stem}", plans)))
    finally:
        os.chdir(cwd)
    return out


def test_every_golden_trainjob_is_valid_for_the_crd_and_webhooks(outputs):
    results = K.oracle_validate([y for _, y, _ in outputs])
    bad = [r for r in results if not r.get("valid") or r.get("errors")]
    assert not bad, bad
    # one result per TrainJob (a batch-mode TrainingRuntime in the same file is the runtime they are checked with)
    count = sum(
        len([d for d in __import__("yaml").safe_load_all(y.read_text()) if d and d.get("kind") == "TrainJob"])
        for _, y, _ in outputs
    )
    assert len(results) == count


def _secret_names(yaml_path: Path):
    import yaml

    return [
        e["name"]
        for d in yaml.safe_load_all(yaml_path.read_text())
        if d
        for e in d["spec"].get("trainer", {}).get("env", [])
        if "valueFrom" in e
    ]


def test_every_golden_sdk_program_submits_the_same_trainjob(outputs):
    plain = [o for o in outputs if not _secret_names(o[1])]
    assert len(plain) < len(outputs)  # the secrets golden is checked by the next test
    results = K.oracle_compare_with_runtimes([(y, p) for _, y, p in plain], jobs=2)
    failed = [(rel, text) for (rel, _, _), (rc, text) in zip(plain, results) if rc != 0]
    assert not failed, "\n\n".join(f"{rel}:\n{text}" for rel, text in failed)


def test_golden_sdk_programs_take_secrets_from_the_submitting_shell(outputs, tmp_path, monkeypatch):
    """SDK 0.5 cannot write valueFrom.secretKeyRef (CustomTrainerContainer.env is dict[str, str]); the
    generated code reads each secret from the environment of whoever runs it. With those variables set,
    it submits the YAML's TrainJob with the Secret references replaced by the values."""
    import yaml

    with_secrets = [o for o in outputs if _secret_names(o[1])]
    assert with_secrets
    pairs = []
    for _rel, y, p in with_secrets:
        docs = [d for d in yaml.safe_load_all(y.read_text()) if d]
        for d in docs:
            for e in d["spec"]["trainer"]["env"]:
                if "valueFrom" in e:
                    monkeypatch.setenv(e["name"], f"value-of-{e['name']}")
                    e["value"] = f"value-of-{e.pop('valueFrom') and e['name']}"
        y2 = tmp_path / y.name
        y2.write_text(yaml.safe_dump_all(docs))
        assert "_from_submit_env(" in p.read_text() and "value-of-" not in p.read_text()
        pairs.append((y2, p))
    results = K.oracle_compare_with_runtimes(pairs, jobs=2)
    failed = [(rel, text) for (rel, _, _), (rc, text) in zip(with_secrets, results) if rc != 0]
    assert not failed, "\n\n".join(f"{rel}:\n{text}" for rel, text in failed)
