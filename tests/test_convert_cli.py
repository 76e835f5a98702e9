"""`slurm2kf convert` command line: outputs, stderr format, exit codes, atomic -o, sbatch precedence."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

FIX = Path(__file__).parent / "fixtures" / "convert"
SIMPLE = "#!/bin/bash\n#SBATCH --job-name=simple\n#SBATCH --nodes=2\nsrun torchrun --nproc_per_node 4 t.py\n"


def write(tmp_path, text, name="job.sbatch"):
    p = tmp_path / name
    p.write_bytes(text.encode())
    return str(p)


def test_yaml_on_stdout_findings_on_stderr(cli, tmp_path):
    path = write(tmp_path, SIMPLE + "echo done\n")
    r = cli("convert", path)
    assert r.exit_code == 0, r.stderr
    [doc] = [d for d in yaml.safe_load_all(r.stdout) if d]
    assert doc["kind"] == "TrainJob" and doc["spec"]["trainer"]["numNodes"] == 2
    assert f"{path}:5: info P435 " in r.stderr
    assert "P435" not in r.stdout


def test_python_and_json_outputs(cli, tmp_path):
    path = write(tmp_path, SIMPLE)
    py = cli("convert", path, "--to", "python")
    assert py.exit_code == 0 and "CustomTrainerContainer(" in py.stdout
    compile(py.stdout, "out.py", "exec")
    js = cli("convert", path, "--to", "json")
    data = json.loads(js.stdout)
    assert data["plans"][0]["name"] == "simple"


def test_findings_comment_keeps_the_documents(cli, tmp_path):
    path = write(tmp_path, SIMPLE + "module load cuda\n")
    plain = cli("convert", path)
    commented = cli("convert", path, "--findings-comment")
    assert list(yaml.safe_load_all(plain.stdout)) == list(yaml.safe_load_all(commented.stdout))
    assert "P402" in commented.stdout


def test_output_file_is_written_atomically(cli, tmp_path):
    path = write(tmp_path, SIMPLE)
    out = tmp_path / "out.yaml"
    out.write_text("old")
    r = cli("convert", path, "-o", str(out))
    assert r.exit_code == 0 and r.stdout == ""
    assert yaml.safe_load(out.read_text())["metadata"]["name"] == "simple"
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".slurm2kf-")]


def test_unwritable_output_is_exit_2(cli, tmp_path):
    path = write(tmp_path, SIMPLE)
    r = cli("convert", path, "-o", str(tmp_path / "missing-dir" / "x.yaml"))
    assert r.exit_code == 2


def test_exit_codes(cli, tmp_path):
    assert cli("convert", str(tmp_path / "nope.sbatch")).exit_code == 2
    assert cli("convert", write(tmp_path, SIMPLE), "--to", "xml").exit_code == 2
    refused = cli("convert", write(tmp_path, "#SBATCH -N 2\npython t.py\n", "noshebang.sbatch"))
    assert refused.exit_code == 1 and "P401" in refused.stderr
    sif = cli("convert", str(FIX / "container" / "local_sif.sbatch"))
    assert sif.exit_code == 1 and ": error L310 " in sif.stderr
    fixed = cli("convert", str(FIX / "container" / "local_sif.sbatch"), "--image", "ghcr.io/me/torch:1")
    assert fixed.exit_code == 0 and ": info L310 " in fixed.stderr
    assert yaml.safe_load(fixed.stdout)["spec"]["trainer"]["image"] == "ghcr.io/me/torch:1"


def test_sbatch_precedence_cli_over_env_over_directives(cli, tmp_path):
    path = write(tmp_path, SIMPLE)
    r = cli("convert", path, "--sbatch-env", "SBATCH_TIMELIMIT=10", "--", "--nodes=3")
    doc = yaml.safe_load(r.stdout)
    assert doc["spec"]["trainer"]["numNodes"] == 3
    assert doc["spec"]["activeDeadlineSeconds"] == 600


def test_namespace_runtime_gpu_resource_options(cli, tmp_path):
    path = write(tmp_path, "#!/bin/bash\n#SBATCH --gres=gpu:2\npython t.py\n")
    r = cli(
        "convert",
        path,
        "--namespace",
        "team-a",
        "--gpu-resource",
        "amd.com/gpu",
        "--runtime",
        "my-torch",
        "--image",
        "ghcr.io/me/x:1",
    )
    doc = yaml.safe_load(r.stdout)
    assert doc["metadata"]["namespace"] == "team-a"
    assert doc["spec"]["runtimeRef"]["name"] == "my-torch"
    assert doc["spec"]["trainer"]["resourcesPerNode"]["limits"] == {"amd.com/gpu": "2"}


def test_array_expand_writes_one_document_per_index(cli, tmp_path):
    path = write(tmp_path, "#!/bin/bash\n#SBATCH --job-name=a\n#SBATCH --array=1-3\npython t.py\n")
    docs = [d for d in yaml.safe_load_all(cli("convert", path, "--array-mode", "expand").stdout) if d]
    assert [d["metadata"]["name"] for d in docs] == ["a-1", "a-2", "a-3"]


def test_profile_option_and_bad_profile(cli, tmp_path):
    prof = Path(__file__).parent / "fixtures" / "profiles"
    script = prof / "university" / "scripts" / "resnet_torchrun.sbatch"
    r = cli("convert", str(script))  # slurm2kf.yaml found upward from the script
    assert r.exit_code in (0, 1) and "F500" in r.stderr
    bad = sorted((prof / "bad").glob("*.yaml"))[0]
    r = cli("convert", write(tmp_path, SIMPLE), "--profile", str(bad))
    assert r.exit_code == 2 and "Traceback" not in r.stderr


def test_script_from_stdin(cli):
    r = cli("convert", "-", input=SIMPLE)
    assert r.exit_code == 0, r.stderr
    assert yaml.safe_load(r.stdout)["spec"]["trainer"]["numNodes"] == 2
