#!/usr/bin/env python3
"""Byte-identical outputs across optimisations: digests of everything the pipeline emits.

Converts every file under tests/fixtures/ and examples/, plus N generated real-sized scripts
(benchmarks/realistic_scripts.py) and N scripts of bench_migrate's fixture-family generator, to
  * TrainJob YAML (plain and with the findings comment, as migrate writes it),
  * SDK Python,
  * plan JSON (`--to json`),
  * the migrate report record (JSON) and its HTML section,
and stores one sha256 per (input, output kind). Run `--save FILE` before a change and `--check FILE`
after it: any difference is listed and the exit status is 1.

    .venv/bin/python benchmarks/output_digests.py --save /tmp/digests.json [--generated 300]
    .venv/bin/python benchmarks/output_digests.py --check /tmp/digests.json
    .venv/bin/python benchmarks/output_digests.py --migrate --save /tmp/m.json   # whole migrate output trees

With --migrate it instead runs `slurm2kf migrate --jobs 1` on a repository made of the fixture
repositories and the generated scripts, and digests every file migrate writes (TrainJobs, SDK
code, kustomizations, manifest, and the JSON, HTML and Markdown reports). SLURM2KF_CODE=DIR runs
the translator found in DIR instead (to digest an older commit's outputs for the same inputs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def inputs(generated: int):
    for root in ("tests/fixtures", "examples", "benchmarks"):
        for p in sorted((REPO / root).rglob("*")):
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts:
                yield str(p.relative_to(REPO)), p.read_bytes()
    import realistic_scripts

    for i in range(generated):
        yield f"<realistic {i}>", realistic_scripts.script(i).encode("utf-8")
    import bench_migrate

    texts = bench_migrate.families()
    rnd = random.Random(7)
    for i in range(generated):
        team = bench_migrate.TEAMS[i % len(bench_migrate.TEAMS)]
        yield f"<family {i}>", bench_migrate.vary(texts[i % len(texts)], i, rnd, team).encode("utf-8")


def migrate_digests(generated: int) -> dict:
    import os
    import shutil
    import subprocess

    base = Path(tempfile.mkdtemp(prefix="digests-migrate-", dir=os.path.expanduser("~/.cache")))
    try:
        src = base / "src"
        shutil.copytree(REPO / "tests" / "fixtures" / "repo", src / "fixtures-repo")
        shutil.copytree(REPO / "examples", src / "examples")
        for name, data in inputs(generated):
            if name.startswith("<"):
                kind, i = name.strip("<>").split()
                dst = src / kind / f"team{int(i) % 7}" / f"job{i}.sbatch"
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_bytes(data)
        code = os.environ.get("SLURM2KF_CODE", str(REPO))
        env = dict(os.environ, PYTHONPATH=code)
        proc = subprocess.run(
            [sys.executable, "-m", "translator", "migrate", str(src), "-o", str(base / "out"), "--jobs", "1"],
            cwd=code,
            env=env,
            capture_output=True,
            text=True,
        )
        out = {"<exit>": {"code": str(proc.returncode)}}
        for p in sorted((base / "out").rglob("*")):
            if p.is_file():
                out[str(p.relative_to(base / "out"))] = {"sha": hashlib.sha256(p.read_bytes()).hexdigest()[:16]}
        return out
    finally:
        shutil.rmtree(base, ignore_errors=True)


def digests(generated: int) -> dict:

    from translator.emit import plan_json, sdk_python, trainjob_yaml
    from translator.pipeline import ConvertSettings, convert
    from translator.report import html
    from translator.report.build import script_report

    def h(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]

    out = {}
    settings_list = (("", ConvertSettings()), ("expand:", ConvertSettings(array_mode="expand")))
    for name, data in inputs(generated):
        for tag, settings in settings_list:
            if tag and b"--array" not in data and b"-a " not in data:
                continue
            conv = convert(name, data=data, settings=settings)
            d = {}
            yaml_text = ""
            if conv.plans:
                yaml_text = trainjob_yaml.render(conv.plans, findings_comment=True)
                d["yaml"] = h(trainjob_yaml.render(conv.plans))
                d["yaml+findings"] = h(yaml_text)
                d["sdk"] = h(sdk_python.render(conv.plans))
                d["json"] = h(plan_json.render(conv.plans))
            sr = script_report(conv, name, yaml_text, ["a.yaml", "a.py"] if conv.plans else [], settings=settings)
            d["report"] = h(json.dumps(sr.to_json(), ensure_ascii=False, sort_keys=True, default=str))
            d["html"] = h(html._PART.join(html.script_parts(sr)))
            d["diags"] = h(repr([(x.severity, x.code, x.line, x.message) for x in conv.diagnostics]))
            out[tag + name] = d
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--generated", type=int, default=300)
    ap.add_argument("--migrate", action="store_true", help="digest migrate's output trees instead")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save")
    g.add_argument("--check")
    args = ap.parse_args()
    got = migrate_digests(args.generated) if args.migrate else digests(args.generated)
    if args.save:
        Path(args.save).write_text(json.dumps(got, indent=1, sort_keys=True))
        print(f"saved {len(got)} inputs, {sum(len(v) for v in got.values())} digests to {args.save}")
        return 0
    want = json.loads(Path(args.check).read_text())
    bad = []
    for k in sorted(set(want) | set(got)):
        if want.get(k) != got.get(k):
            w, g_ = want.get(k) or {}, got.get(k) or {}
            bad.append((k, sorted(x for x in set(w) | set(g_) if w.get(x) != g_.get(x))))
    for k, kinds in bad[:40]:
        print(f"DIFFERS: {k}: {', '.join(kinds)}")
    print(f"checked {len(got)} inputs: {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
