"""Differential test: our validator and the shared oracle give the same verdict on mutated TrainJobs.

Valid TrainJobs from the emitter are mutated at random places under `metadata` and `spec` (a field
set to a value of another type, an out-of-range number, a bad name or quantity, a reserved env
name, an unknown or removed key), deterministically (seeded).  Each file is judged by both
validators; every verdict must agree.  A sizable share must be invalid, so the test has teeth.
"""

from __future__ import annotations

import copy
import random

import yaml

from kf_helpers import oracle_validate, sample_plans
from translator.emit.trainjob import trainjob_dict
from translator.validate.crd import load_crd
from translator.validate.validator import validate_text

VALUES = [
    None,
    -1,
    0,
    1,
    2**40,
    1.5,
    4.0,
    True,
    "",
    "x",
    "Bad_Name",
    "500m",
    "4Gi",
    "32GB",
    [],
    {},
    ["a"],
    {"a": "b"},
    "a" * 70,
    "PET_NNODES",
    "nvidia.com/gpu",
    "gpu",
    "example.com/x",
    "-1",
    "1e3",
]
KEYS = [
    "foo",
    "numProcPerNode",
    "suspend",
    "managedBy",
    "name",
    "value",
    "valueFrom",
    "apiGroup",
    "kind",
    "mountPath",
    "claimName",
    "PET_NNODES",
    "OMPI_MCA_plm_rsh_args",
    "cpu",
    "memory",
    "nvidia.com/gpu",
    "gpu",
    "requests",
    "limits",
    "manager",
    "time",
    "env",
    "initializer",
    "generateName",
    "namespace",
    "labels",
]


def _paths(obj, path=()):
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, path + (i,))


def _mutate(doc, rng):
    doc = copy.deepcopy(doc)
    candidates = [(p, o) for p, o in _paths(doc) if p and p[0] in ("metadata", "spec")]
    path, obj = rng.choice(candidates)
    r = rng.random()
    if isinstance(obj, dict) and r < 0.4:
        obj[rng.choice(KEYS)] = rng.choice(VALUES)
    elif isinstance(obj, dict) and obj and r < 0.6:
        del obj[rng.choice(list(obj))]
    else:
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        parent[path[-1]] = rng.choice(VALUES)
    return doc


def test_same_verdicts_as_the_oracle_on_mutated_trainjobs(tmp_path):
    rng = random.Random(20261202)
    bases = [trainjob_dict(p) for p in sample_plans().values()]
    files = []
    for i in range(240):
        doc = rng.choice(bases)
        for _ in range(rng.randint(1, 2)):
            doc = _mutate(doc, rng)
        f = tmp_path / f"m{i:03d}.yaml"
        f.write_text(yaml.safe_dump(doc), encoding="utf-8")
        files.append(f)
    crd = load_crd()
    ours = {}
    for f in files:
        results = [r for r in validate_text(f.read_text(), crd, file=str(f)) if not r.skipped]
        ours[f.name] = all(r.valid for r in results)
    oracle = {}
    for v in oracle_validate(files):
        name = v["file"].rsplit("/", 1)[-1]
        oracle[name] = oracle.get(name, True) and v["valid"]
    assert len(oracle) == len(files)
    disagree = {k: (ours[k], oracle[k]) for k in oracle if ours[k] != oracle[k]}
    assert not disagree, disagree
    invalid = sum(not v for v in oracle.values())
    assert 0.4 * len(files) < invalid < len(files)  # both kinds of verdict are exercised
