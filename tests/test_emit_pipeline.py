"""Emitters on real conversions: every corpus script's YAML is valid for our validator and for the
oracle, and for one script of each launcher family (plus pip installs and array expansion) the SDK
code submits exactly the YAML's TrainJobs."""

from __future__ import annotations

import functools


from kf_helpers import CRD, REPO, oracle_compare_with_runtimes, oracle_validate
from translator.emit import plan_json, sdk_python, trainjob_yaml
from translator.pipeline import ConvertSettings, convert
from translator.validate.crd import load_crd
from translator.validate.validator import validate_text

FIXTURES = REPO / "tests" / "fixtures" / "sbatch"


@functools.lru_cache(maxsize=1)
def _converted():
    out = []
    for path in sorted(FIXTURES.iterdir()):
        if path.is_file():
            c = convert(str(path))
            if c.plans:
                out.append((path, c.plans))
    return tuple(out)


def test_every_corpus_yaml_is_valid_for_us_and_the_oracle(tmp_path):
    crd = load_crd(str(CRD))
    converted = _converted()
    assert len(converted) >= 50
    files = []
    for path, plans in converted:
        text = trainjob_yaml.render(plans, findings_comment=True)
        results = validate_text(text, crd, file=path.name)
        assert all(r.valid for r in results), (path.name, [r.to_json() for r in results])
        assert len([r for r in results if not r.skipped]) == len(plans)
        out = tmp_path / (path.name + ".yaml")
        out.write_text(text, encoding="utf-8")
        files.append(out)
        plan_json.render(plans)
        compile(sdk_python.render(plans), path.name + ".py", "exec")
    verdicts = oracle_validate(files)
    bad = [v for v in verdicts if not v["valid"]]
    assert not bad, bad
    assert len(verdicts) == sum(len(p) for _, p in converted)


def test_one_script_per_family_submits_the_same_trainjob_through_the_sdk(tmp_path):
    picked = {}
    for path, plans in _converted():
        p = plans[0]
        key = (p.launcher, p.runtime, bool(p.packages), bool(p.patches))
        picked.setdefault(key, (path, plans))
    # array expansion: one TrainJob per index, one train() call each
    arr = FIXTURES / "array_list.sbatch"
    conv = convert(str(arr), settings=ConvertSettings(array_mode="expand", namespace="team-a"))
    assert len(conv.plans) > 1
    picked[("array-expand",)] = (arr, conv.plans)
    families = {k[0] for k in picked}
    assert {"torchrun", "mpi", "python"} <= families, families
    # all of them in one file: one SDK run (compare_outputs pairs the TrainJobs in order)
    plans = [p for _, ps in picked.values() for p in ps]
    assert len({p.name for p in plans}) == len(plans)
    y, py = tmp_path / "families.yaml", tmp_path / "families.py"
    y.write_text(trainjob_yaml.render(plans), encoding="utf-8")
    py.write_text(sdk_python.render(plans), encoding="utf-8")
    pairs = [(y, py)]
    results = oracle_compare_with_runtimes(pairs, jobs=2)  # (batch mode: its runtime is in the YAML)
    failures = [(p[0].name, out) for p, (rc, out) in zip(pairs, results) if rc != 0 or "equivalent: yes" not in out]
    assert not failures, "\n\n".join(f"{n}:\n{o}" for n, o in failures)
