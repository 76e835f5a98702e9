"""Site profiles: loading, validation errors (code, key path, line), patterns, lookup order, `profile check`."""

from __future__ import annotations

from docs_text import all_docs

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from translator.cli import cli
from translator.profile.load import ProfileError, find_profile, load_profile, parse_profile
from translator.profile.patterns import PatternError, compile_pattern

FIX = Path(__file__).parent / "fixtures" / "profiles"
BAD = FIX / "bad"
HEAD = "apiVersion: slurm2kf/v1\nkind: SiteProfile\n"


def errors(text: str):
    with pytest.raises(ProfileError) as exc:
        parse_profile(text, "p.yaml")
    return [(d.code, d.line, d.message) for d in exc.value.diagnostics]


# ---- the three site fixtures are valid and read as written ----------------------------------


def test_university_profile_reads_as_written():
    p = load_profile(str(FIX / "university" / "slurm2kf.yaml"))
    assert p.name == "uni-hpc"
    assert p.defaults.namespace == "hpc-users"
    assert p.defaults.image_pull_secrets == ("uni-registry",)
    assert p.defaults.shm_size == "16Gi"
    gpu, cpu = p.partitions
    assert (gpu.pattern.text, gpu.queue, gpu.line) == ("gpu", "gpu-queue", 20)
    assert gpu.placement.node_selector == (("uni.example.edu/pool", "gpu"),)
    assert gpu.placement.tolerations == ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
    assert (gpu.node.cpus, gpu.node.memory, gpu.node.gpus) == ("64", "480Gi", 4)
    assert cpu.pattern.kind == "glob" and cpu.pattern.matches("cpu-long") and not cpu.pattern.matches("gpu")
    assert [q.priority_class for q in p.qos] == ["normal", "high"]
    assert p.qos[1].pattern.matches("long") and not p.qos[1].pattern.matches("longer")
    assert [(f.path, f.mount_path, f.volume_name) for f in p.filesystems] == [
        ("/home", "/home", "fs-home"),
        ("/scratch", "/scratch", "fs-scratch"),
        ("$SCRATCH", "/scratch/user", "var-scratch"),
        ("/apps", "/apps", "fs-apps"),
    ]
    assert p.filesystems[3].source == {"hostPath": {"path": "/apps", "type": "Directory"}}
    assert p.filesystems[3].read_only
    assert p.runtimes[0].launchers == ("torchrun", "srun-tasks", "python", "script", "accelerate")


def test_ailab_and_amd_profiles_are_valid():
    ai = load_profile(str(FIX / "ailab" / "slurm2kf.yaml"))
    assert ai.defaults.partition == "h100"
    assert ai.partitions[0].pattern.matches("h100-prio") and not ai.partitions[0].pattern.matches("h100x")
    assert ai.partitions[1].placement.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][0]["matchExpressions"][0]["values"] == ["all-1g.10gb"]
    assert ai.gpu_types[1].resource == "nvidia.com/mig-1g.10gb"
    assert ai.filesystems[1].source == {"nfs": {"server": "nfs.lab.example.com", "path": "/export/checkpoints"}}
    amd = load_profile(str(FIX / "amd" / "slurm2kf.yaml"))
    assert amd.defaults.gpu_resource == "amd.com/gpu"
    assert [r.name for r in amd.runtimes] == ["torch-distributed-rocm", "deepspeed-distributed"]


# ---- every error kind: code, line, key path -------------------------------------------------


@pytest.mark.parametrize(
    "name, expected",
    [
        ("unknown_key.yaml", [("F551", 5, "partitions.gpu.queu: unknown key `queu`")]),
        (
            "wrong_type.yaml",
            [
                ("F552", 5, "defaults.imagePullSecrets: expected a list, got string `regcred`"),
                ("F552", 8, "partitions.gpu.node.gpus: expected an integer"),
            ],
        ),
        (
            "bad_pattern.yaml",
            [
                ("F553", 4, 'qos["re:^(high|urgent$"]: pattern'),
                ("F553", 7, "images.rules[0].module: pattern `pytorch/[2.1`"),
            ],
        ),
        (
            "bad_pvc.yaml",
            [
                ("F554", 5, "filesystems[0].pvc: `Scratch_PVC` is not a DNS-1123"),
                ("F554", 7, "filesystems[1].name: `Home.Volume` is not a DNS-1123 label"),
            ],
        ),
        (
            "bad_quantity.yaml",
            [
                ("F555", 4, "defaults.shmSize: `64GB` is not a Kubernetes quantity"),
                ("F555", 7, "partitions.gpu.node.memory: `lots`"),
            ],
        ),
        ("bad_version.yaml", [("F557", 1, "apiVersion: `slurm2kf/v2` is not supported")]),
        ("syntax.yaml", [("F550", 5, "not valid YAML")]),
        ("duplicate_key.yaml", [("F559", 6, "partitions.gpu: duplicate key (first written on line 4)")]),
        (
            "conflicts.yaml",
            [
                ("F558", 4, "filesystems[0]: set only one of pvc, nfs, hostPath"),
                ("F556", 7, "filesystems[1].mountPath: required when path is the variable `$SCRATCH`"),
                ("F558", 11, "runtimes[0].launchers[1]: `slurm-magic` is not one of"),
            ],
        ),
        (
            "missing_required.yaml",
            [
                ("F556", 1, "apiVersion: required key is missing"),
                ("F556", 3, "runtimes[0].name: required key is missing"),
            ],
        ),
        (
            "bad_names.yaml",
            [
                ("F554", 4, "defaults.namespace: `ML_Team`"),
                ("F554", 6, 'defaults.labels["bad key!"]'),
                ("F554", 9, "partitions.gpu.queue: `GPU Queue`"),
                ("F554", 13, "gpuTypes.a100.resource: `gpu` needs a domain prefix"),
                ("F554", 17, "images.rules[0].image: `/shared/containers/pytorch.sif` looks like a local file"),
            ],
        ),
        ("not_mapping.yaml", [("F552", 1, "top level: expected a mapping, got a list")]),
    ],
)
def test_bad_profile_fixtures(name, expected):
    with pytest.raises(ProfileError) as exc:
        load_profile(str(BAD / name))
    got = [(d.code, d.line, d.message) for d in exc.value.diagnostics]
    assert len(got) == len(expected), got
    for (code, line, msg), (gcode, gline, gmsg) in zip(expected, got):
        assert (gcode, gline) == (code, line), got
        assert gmsg.startswith(msg), gmsg
    assert all(d.severity == "error" for d in exc.value.diagnostics)


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(ProfileError) as exc:
        load_profile(str(BAD / "unknown_key.yaml"))
    assert exc.value.diagnostics[0].suggestion == "did you mean `queue`?"


def test_unquoted_number_where_a_string_is_expected_says_quote_it():
    (err,) = errors(HEAD + "defaults:\n  labels:\n    tier: 1\n")
    assert err[:2] == ("F552", 5)
    assert 'defaults.labels.tier: expected a string, got integer `1` (quote it: "1")' == err[2]


def test_numeric_partition_names_are_names():
    p = parse_profile(HEAD + "partitions:\n  2024:\n    queue: q2024\n")
    assert p.partitions[0].pattern.matches("2024")


def test_unknown_top_level_key_and_toleration_and_affinity_shapes():
    errs = errors(
        HEAD + "partition:\n  gpu: {}\n"
        "constraints:\n  ib:\n    tolerations:\n      - {key: x, operator: Maybe}\n"
        "    affinity:\n      nodeAffinity:\n        required: []\n"
    )
    assert [(c, line) for c, line, _ in errs] == [("F551", 3), ("F558", 8), ("F551", 11)]
    assert "did you mean" in parse_suggestion(HEAD + "partition:\n  gpu: {}\n")
    assert errs[1][2].startswith("constraints.ib.tolerations[0].operator: `Maybe` is not one of: Exists, Equal")
    assert errs[2][2].startswith("constraints.ib.affinity.nodeAffinity.required: unknown key")


def parse_suggestion(text):
    with pytest.raises(ProfileError) as exc:
        parse_profile(text, "p.yaml")
    return exc.value.diagnostics[0].suggestion or ""


def test_duplicate_volume_names_and_mount_paths_are_errors():
    errs = errors(
        HEAD + "filesystems:\n  - {path: /scratch, pvc: a}\n  - {path: /scratch, pvc: b}\n"
        "  - {path: /dev/shm, pvc: c}\n"
    )
    assert [(c, line) for c, line, _ in errs] == [("F558", 5), ("F558", 5), ("F558", 6)]
    assert "volume name `fs-scratch` is already used by the entry on line 4" in errs[0][2]
    assert "mount path `/scratch` is already used" in errs[1][2]
    assert "`/dev/shm` is reserved" in errs[2][2]


def test_paths_must_be_absolute_and_normal():
    errs = errors(
        HEAD + "filesystems:\n  - {path: scratch, pvc: a}\n  - {path: /data/, pvc: b}\n"
        "  - {path: /x/../y, pvc: c}\n  - {path: $1BAD, pvc: d, mountPath: /q}\n"
    )
    assert [c for c, _, _ in errs] == ["F554"] * 4
    assert "`scratch` is not an absolute path" in errs[0][2]
    assert "ends with `/`" in errs[1][2]
    assert "`..` components" in errs[2][2]
    assert "not an environment variable name" in errs[3][2]


def test_empty_profile_and_non_utf8_and_missing_file(tmp_path):
    (err,) = errors("")
    assert err[0] == "F550" and "empty" in err[2]
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(HEAD.encode() + b"metadata:\n  name: caf\xe9\n")
    with pytest.raises(ProfileError) as exc:
        load_profile(str(bad))
    assert (exc.value.diagnostics[0].code, exc.value.diagnostics[0].line) == ("F550", 4)
    with pytest.raises(ProfileError) as exc:
        load_profile(str(tmp_path / "nope.yaml"))
    assert exc.value.diagnostics[0].code == "F560"


def test_every_problem_is_reported_not_just_the_first():
    errs = errors(HEAD + "defaults:\n  namespace: A\n  shmSize: 1GB\nqos:\n  x: {priorityClass: Y}\n")
    assert [(c, line) for c, line, _ in errs] == [("F554", 4), ("F555", 5), ("F554", 7)]


def test_null_means_not_filled_in():
    p = parse_profile(
        HEAD + "defaults:\n  namespace: null\npartitions:\n  gpu:\n    queue: null\n"
        "filesystems:\n  - path: $HOME\n    mountPath: null\n    pvc: null\n"
    )
    assert p.defaults.namespace is None
    assert p.partitions[0].queue is None
    assert p.filesystems[0].source is None


# ---- patterns ------------------------------------------------------------------------------


def test_patterns_exact_glob_regex():
    assert compile_pattern("gpu").matches("gpu") and not compile_pattern("gpu").matches("gpu2")
    assert compile_pattern("gpu*").matches("gpu-long")
    assert compile_pattern("a100_[12]g*").matches("a100_1g.10gb")
    assert compile_pattern("re:h100|a100").matches("a100")
    assert not compile_pattern("re:h100").matches("h100x")  # whole-name match
    with pytest.raises(PatternError):
        compile_pattern("re:(")
    with pytest.raises(PatternError):
        compile_pattern("")


# ---- lookup order ---------------------------------------------------------------------------


def test_find_profile_order(tmp_path):
    root = tmp_path / "repo"
    (root / "jobs" / "deep").mkdir(parents=True)
    script = root / "jobs" / "deep" / "a.sbatch"
    script.write_text("#!/bin/bash\n")
    assert find_profile(str(script), environ={}) is None
    (root / "slurm2kf.yaml").write_text(HEAD)
    assert find_profile(str(script), environ={}) == str(root / "slurm2kf.yaml")
    (root / "jobs" / "slurm2kf.yaml").write_text(HEAD)
    assert find_profile(str(script), environ={}) == str(root / "jobs" / "slurm2kf.yaml")
    assert find_profile(str(script), environ={"SLURM2KF_PROFILE": "/env.yaml"}) == "/env.yaml"
    assert find_profile(str(script), explicit="/cli.yaml", environ={"SLURM2KF_PROFILE": "/env.yaml"}) == "/cli.yaml"


# ---- `slurm2kf profile check` --------------------------------------------------------------


def test_check_ok_exit_0():
    res = CliRunner().invoke(cli, ["profile", "check", str(FIX / "university" / "slurm2kf.yaml")])
    assert res.exit_code == 0, res.output
    assert (
        "ok (profile `uni-hpc`: 2 partitions, 2 qos, 2 accounts, 2 GPU types, 1 constraint, 3 image rules, "
        "4 file systems, 1 runtime)" in res.output
    )


@pytest.mark.parametrize("name", sorted(p.name for p in BAD.glob("*.yaml")))
def test_check_bad_exit_2_names_key_and_line(name):
    path = str(BAD / name)
    proc = subprocess.run(
        [sys.executable, "-m", "translator", "profile", "check", path], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"{path}:") and " error F5" in first
    line = first[len(path) + 1 :].split(":", 1)[0]
    assert line.isdigit()
    assert proc.stderr.rstrip().endswith("the profile cannot be used")


def test_check_missing_file_exit_2():
    res = CliRunner().invoke(cli, ["profile", "check", "/nonexistent/slurm2kf.yaml"])
    assert res.exit_code == 2
    assert "F560" in res.output


def test_readme_example_profile_is_valid():
    readme = all_docs()
    section = readme[readme.index("<!-- SECTION:profile -->") : readme.index("<!-- /SECTION:profile -->")]
    example = section[section.index("### A complete example") :]
    block = example[example.index("```yaml\n") + len("```yaml\n") : example.index("\n```", example.index("```yaml"))]
    p = parse_profile(block, "README.md")
    assert p.name == "uni-hpc" and len(p.partitions) == 3 and len(p.runtimes) == 2
    assert p.runtimes[1].replicated_jobs == ("launcher", "node")
    assert p.filesystems[2].sub_path == "users" and p.filesystems[3].read_only
    # every top-level key of the schema appears in the complete example
    for key in (
        "defaults",
        "partitions",
        "qos",
        "accounts",
        "gpuTypes",
        "constraints",
        "images",
        "filesystems",
        "runtimes",
    ):
        assert f"\n{key}:" in block


def test_aliases_and_deep_nesting_are_refused_cleanly():
    bomb = HEAD + "a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n"
    errs = errors(bomb)
    assert errs[0][0] == "F550" and errs[0][1] == 4 and "aliases" in errs[0][2]
    deep = HEAD + "metadata: " + "[" * 1100 + "]" * 1100 + "\n"
    (err,) = errors(deep)
    assert err[0] == "F550"


def test_nfs_server_must_be_a_host():
    (err,) = errors(HEAD + 'filesystems:\n  - path: /d\n    nfs: {server: "evil\\nhost", path: /x}\n')
    assert err[:2] == ("F554", 5) and "not a host name" in err[2]


def test_every_f_code_is_documented_in_readme():
    import re

    root = Path(__file__).resolve().parents[1]
    used = set()
    for p in (root / "translator" / "profile").glob("*.py"):
        used |= set(re.findall(r'"(F5\d\d)"', p.read_text(encoding="utf-8")))
    readme = all_docs()
    m = re.search(r"<!-- SECTION:codes-F -->(.*?)<!-- /SECTION:codes-F -->", readme, re.S)
    documented = set(re.findall(r"^\|\s*(F5\d\d)\s*\|", m.group(1), re.M))
    assert len(used) > 30
    assert used == documented, (sorted(used - documented), sorted(documented - used))


def test_kubernetes_rules_for_tolerations_selectors_and_reserved_names():
    errs = errors(
        HEAD
        + """partitions:
  gpu:
    tolerations:
      - {key: a, operator: Exists, value: x}
      - {key: b, operator: Equal, value: y, effect: NoSchedule, tolerationSeconds: 5}
      - {value: z}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
            - matchExpressions:
                - {key: k, operator: In}
                - {key: k, operator: Gt, values: ["x"]}
        preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 200
            preference: {matchExpressions: [{key: k, operator: Exists, values: [a]}]}
filesystems:
  - {path: /x, name: dshm, pvc: p}
"""
    )
    assert [(c, line) for c, line, _ in errs] == [("F558", n) for n in (6, 7, 8, 14, 15, 17, 18, 20)]
    msgs = [m for _, _, m in errs]
    assert msgs[0] == "partitions.gpu.tolerations[0].value: must be empty when operator is Exists"
    assert msgs[1].endswith("tolerationSeconds: only applies with effect NoExecute")
    assert msgs[2].endswith("operator: a toleration without a key must use operator Exists")
    assert msgs[3].endswith("matchExpressions[0].values: operator In needs at least one value")
    assert msgs[4].endswith("matchExpressions[1].values: operator Gt takes exactly one integer value")
    assert msgs[5].endswith("[0].weight: must be at most 100, got 200")
    assert msgs[6].endswith("matchExpressions[0].values: operator Exists takes no values")
    assert msgs[7] == "filesystems[0].name: `dshm` is reserved for the /dev/shm volume"


def test_check_warns_about_entries_that_never_take_effect(tmp_path):
    prof = tmp_path / "lint.yaml"
    prof.write_text(
        HEAD + 'partitions:\n  "*": {queue: all}\n  gpu: {queue: gpu, gpuType: h100}\n'
        "gpuTypes:\n  a100: {resource: nvidia.com/gpu}\n"
        "runtimes:\n  - {name: a, launchers: [torchrun]}\n  - {name: b, launchers: [torchrun, mpi]}\n"
    )
    res = CliRunner().invoke(cli, ["profile", "check", str(prof)])
    assert res.exit_code == 0  # usable, with warnings
    lines = [ln for ln in res.output.splitlines() if " warning " in ln]
    assert lines == [
        f"{prof}:5: warning F525 partitions.gpu.gpuType: `h100` matches no key of `gpuTypes`, so it sets no GPU "
        "placement or resource (fix: add `h100` to `gpuTypes`)",
        f"{prof}:5: warning F526 partitions.gpu: never used; `*` (line 4) matches first (fix: move it above line 4 "
        "or remove it)",
        f"{prof}:10: warning F527 runtimes[1].launchers: `torchrun` is already given to runtime `a` (line 9), "
        "which wins",
    ]


def test_site_fixtures_have_no_lint_warnings():
    from translator.profile.lint import lint_profile

    for site in ("university", "ailab", "amd"):
        assert lint_profile(load_profile(str(FIX / site / "slurm2kf.yaml"))) == []
