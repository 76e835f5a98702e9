"""`slurm2kf inspect` (translator/cli/inspect_cmd.py): contract, precedence, exit codes.

Scripts are written to tmp_path; expectations follow issue 2 (JSON contract, exit codes 0/1/2)
and the sbatch semantics notes (precedence, job name default).
"""

import json

import pytest

from translator.slurm.job import JOB_FIELDS

GOOD = (
    "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=4\n#SBATCH -p gpu -t 90\n#SBATCH --gres=gpu:a100:4\n"
    "  #SBATCH -N 8\nsrun python train.py\n#SBATCH --mem=1G\n"
)
BAD = "#!/bin/bash\n#SBATCH -J my job\nhostname\n"


@pytest.fixture
def files(tmp_path):
    good = tmp_path / "good.sbatch"
    good.write_text(GOOD)
    bad = tmp_path / "bad.sbatch"
    bad.write_text(BAD)
    return good, bad


def lines_json(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_json_contract_one_object_per_script(cli, files):
    good, bad = files
    r = cli("inspect", "--json", good, bad)
    assert r.exit_code == 1  # sbatch refuses one of them
    a, b = lines_json(r.stdout)
    assert set(a) == {"path", "sbatch_accepts", "diagnostics", "options", "job"}
    assert a["path"] == str(good) and a["sbatch_accepts"] is True
    assert list(a["job"]) == list(JOB_FIELDS)
    job = a["job"]
    assert (job["nodes_min"], job["nodes_max"], job["ntasks_per_node"]) == (2, 2, 4)
    assert (job["partition"], job["time_limit_seconds"]) == ("gpu", 5400)
    assert (job["gpus_per_node"], job["gpu_type"]) == (4, "a100")
    assert job["mem_per_node_mb"] is None  # the --mem line comes after the first command
    assert job["job_name"] == "good.sbatch"
    assert a["options"] == {
        "gres": "gpu:a100:4",
        "nodes": "2",
        "ntasks-per-node": "4",
        "partition": "gpu",
        "time": "01:30:00",
    }
    for d in a["diagnostics"]:
        assert set(d) == {"severity", "line", "code", "message"} and d["severity"] in ("error", "warning", "info")
    assert b["sbatch_accepts"] is False
    assert any(d["code"] == "O205" and d["line"] == 2 and d["severity"] == "error" for d in b["diagnostics"])


def test_exit_zero_when_all_accepted(cli, files):
    r = cli("inspect", "--json", files[0])
    assert r.exit_code == 0


def test_sbatch_args_after_double_dash_win_over_env_and_script(cli, files):
    good, _ = files
    r = cli("inspect", "--json", "--sbatch-env", "SBATCH_PARTITION=cpu", "--sbatch-env", "SBATCH_TIMELIMIT=30", good)
    (a,) = lines_json(r.stdout)
    assert (a["job"]["partition"], a["job"]["time_limit_seconds"]) == ("cpu", 1800)
    r = cli("inspect", "--json", "--sbatch-env", "SBATCH_PARTITION=cpu", good, "--", "-p", "debug", "--time=5")
    (a,) = lines_json(r.stdout)
    assert (a["job"]["partition"], a["job"]["time_limit_seconds"]) == ("debug", 300)


def test_process_environment_only_with_inherit_env(cli, files):
    good, _ = files
    env = {"SBATCH_PARTITION": "fromenv"}
    (a,) = lines_json(cli("inspect", "--json", good, env=env).stdout)
    assert a["job"]["partition"] == "gpu"
    (a,) = lines_json(cli("inspect", "--json", "--inherit-env", good, env=env).stdout)
    assert a["job"]["partition"] == "fromenv"
    # --sbatch-env wins over the inherited value
    (a,) = lines_json(
        cli("inspect", "--json", "--inherit-env", "--sbatch-env", "SBATCH_PARTITION=x", good, env=env).stdout
    )
    assert a["job"]["partition"] == "x"


def test_human_output_line_by_line(cli, files):
    good, bad = files
    r = cli("inspect", good, bad)
    out = r.stdout
    assert r.exit_code == 1
    assert "sbatch would ACCEPT" in out and "sbatch would REFUSE" in out
    assert "-> sets --nodes=2 (node count (min[-max]))" in out
    assert "#SBATCH -N 8" in out and "ignored by sbatch" in out
    assert f"{bad}:2: error O205 Invalid directive found in batch script: job" in out
    assert "time limit:" in out and "5400 s (01:30:00)" in out
    assert "gpu type:          a100" in out


def test_unreadable_and_missing_files_exit_2_without_traceback(cli, files, tmp_path):
    r = cli("inspect", "--json", files[0], tmp_path / "missing.sbatch")
    assert r.exit_code == 2
    assert "missing.sbatch" in r.stderr and "Traceback" not in r.stderr + r.stdout
    assert len(lines_json(r.stdout)) == 1  # the readable script is still printed
    r = cli("inspect", tmp_path)
    assert r.exit_code == 2 and "directory" in r.stderr


def test_usage_errors_exit_2(cli, files):
    assert cli("inspect").exit_code == 2
    assert cli("inspect", "--sbatch-env", "NOEQUALS", files[0]).exit_code == 2
    assert cli("inspect", "--bogus", files[0]).exit_code == 2


def test_bad_bytes_never_traceback(cli, tmp_path):
    p = tmp_path / "crlf.sbatch"
    p.write_bytes(b"#!/bin/bash\r\n#SBATCH -N 2\r\nhostname\r\n")
    q = tmp_path / "binary.sbatch"
    q.write_bytes(b"\x00\xff\xfe garbage")
    r = cli("inspect", "--json", p, q)
    assert r.exit_code == 1
    a, b = lines_json(r.stdout)
    assert a["sbatch_accepts"] is False and b["sbatch_accepts"] is False


def test_hetjob_components_in_json(cli, tmp_path):
    p = tmp_path / "het.sbatch"
    p.write_text("#!/bin/bash\n#SBATCH -J het -N 1 -p gpu\n#SBATCH hetjob\n#SBATCH -N 2 -p cpu\nsrun hostname\n")
    (a,) = lines_json(cli("inspect", "--json", p).stdout)
    assert a["job"]["partition"] == "gpu"
    assert [c["job"]["partition"] for c in a["components"]] == ["gpu", "cpu"]
    assert a["components"][1]["job"]["job_name"] == "het"


def test_subprocess_entry_point(cli_subprocess, files):
    p = cli_subprocess("inspect", "--json", files[0])
    assert p.returncode == 0 and json.loads(p.stdout)["sbatch_accepts"] is True


def test_standard_input_like_sbatch(cli):
    r = cli("inspect", "--json", "-", input="#!/bin/sh\n#SBATCH -N 3\nhostname\n")
    (a,) = lines_json(r.stdout)
    assert r.exit_code == 0 and a["path"] == "-"
    assert a["job"]["job_name"] == "sbatch" and a["job"]["nodes_min"] == 3  # sbatch's name for stdin


def test_errors_shown_under_their_line(cli, files):
    out = cli("inspect", files[1]).stdout
    line, arrow, inline = out.split("\n")[2:5]
    assert line.strip().startswith("2 | #SBATCH -J my job")
    assert inline.strip().startswith("!! error O205")
