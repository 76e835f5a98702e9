"""P447 (secrets), P448 (hard-coded addresses), P445 (one node on an MPI runtime), P449/L359 (container
wrapper env): what the plan does with each, through the real conversion.

Sources of the expected values:
- Kubernetes, "Define a Command and Arguments for a Container" and "Define Environment Variables for a
  Container": `$(VAR)` in command/args is replaced by the container's env var VAR, and an env var with
  `valueFrom.secretKeyRef` reads key KEY of Secret NAME. So a secret given on the command line is carried
  as `$(NAME)` plus an env entry reading the Secret; the value itself is nowhere in the output.
- Secret shapes: Hugging Face user access tokens `hf_…`, GitHub `ghp_…`, Slack webhooks
  `https://hooks.slack.com/services/T…/B…/…`, JWTs (RFC 7519: three base64url parts, the first two JSON
  objects, so `eyJ…`), URL userinfo `user:password@` (RFC 3986 section 3.2.1).
- Kubeflow Trainer MPI plugin (docs kubeflow-trainer.md, "MPI"): with runLauncherAsNode (the shipped
  deepspeed-distributed) numNodes 1 still yields one `node` pod and the launcher, and the hostfile lists
  the node pods first and the launcher last, `slots=S` each.
- DeepSpeed runner (deepspeed/launcher/runner.py): without --num_nodes/--include it uses every host of
  the hostfile with its slots; Open MPI mpirun(1): without -np it starts one process per slot of every
  host, with -np N it fills the hosts in hostfile order, slot by slot (--map-by slot, the default).
- Apptainer user guide, "Environment and metadata": `--env NAME=VALUE` and `APPTAINERENV_NAME` /
  `SINGULARITYENV_NAME` set NAME inside the container.
"""

from __future__ import annotations

import pytest

from translator.pipeline import convert
from translator.plan import secrets

HEAD = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
LAUNCH = "torchrun --nproc-per-node 4 train.py"


def _plan(body: str):
    conv = convert("job.sbatch", data=(HEAD + body).encode("utf-8"))
    assert conv.plans, conv.diagnostics
    return conv.plans[0]


def _codes(plan, code: str) -> list:
    return [f for f in plan.findings if f.code == code]


def _env(plan) -> dict:
    return {e.name: e for e in plan.env}


# ---- P447: never on paths or file-like values ----------------------------------------------------

PATHS = [
    ("APP_HOME", "/home/u/build3"),
    ("APP_HOME", "/home/JSmith/apps/MegatronBuildTree/build3"),
    ("out_dir", "/scratch/abcdefabcdefabcdefabcdefabcdefabcdef/run"),
    ("out_dir", "/scratch/gpfs/jsmith/Llama2Runs/exp12/outputs"),
    ("WORKDIR", "/gpfs/alpine/proj-shared/csc123/JSmith/TrainingRuns2024"),
    ("CKPT_DIR", "/lustre/ckpt/Llama2_7B/global_step12000"),
    ("RESUME", "checkpoints/Epoch10Step50000Loss0123/last.ckpt"),
    ("MODEL", "model_final.ckpt"),
    ("DATA_URL", "https://huggingface.co/datasets/allenai/c4/resolve/main/en"),
    ("RUN_NAME", "Llama2_7B_Finetune_lr3e4_bs128_warmup500_cosine"),
    ("SSH_KEY", "~/.ssh/id_ed25519"),
    ("PRIVATE_KEY", "keys/deploy.pem"),
    ("GIT_COMMIT", "4f2a9c7e1b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a"),
    ("TOKEN_LIMIT", "4096"),
    ("HF_TOKEN", "$HOME/.cache/token"),
]


@pytest.mark.parametrize("name, value", PATHS)
def test_a_path_or_file_like_value_is_carried_as_it_is(name, value):
    plan = _plan(f"export {name}={value}\n{LAUNCH}\n")
    assert _codes(plan, "P447") == []
    e = _env(plan).get(name)
    if not value.startswith("$"):  # (`$HOME/…` needs the shell: P422, not env)
        assert e is not None and e.secret_name is None and e.value == value


# ---- P447: secrets of every shape, wherever they are written -------------------------------------

SECRETS = [
    ("HF_TOKEN", "hf_QmVnYXRpdmVUb2tlbkV4YW1wbGUxMjM0", "hf_QmVnYXRpdmVUb2tlbkV4YW1wbGUxMjM0"),
    ("HF_TOKEN", "'hf_QmVnYXRpdmVUb2tlbkV4YW1wbGUxMjM0'", "hf_QmVnYXRpdmVUb2tlbkV4YW1wbGUxMjM0"),
    ("DB_PASS", "'s3cr3t-pa55'", "s3cr3t-pa55"),
    ("DB_PWD", "Tr0ub4dor3", "Tr0ub4dor3"),
    ("MYSQL_PWD", "hunter2hunter2", "hunter2hunter2"),
    ("DB_PASSWD", "pa55wd-x", "pa55wd-x"),
    ("DATABASE_URL", "postgres://u:pw@db.example.com/x", "postgres://u:pw@db.example.com/x"),
    ("TRACKING", "https://bob:pa55word@mlflow.example.org", "https://bob:pa55word@mlflow.example.org"),
    (
        "SLACK_WEBHOOK_URL",
        "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/XXXXXXXXXXXXXXXXXXXXXXXX",
        "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    (
        "AUTH",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
]


@pytest.mark.parametrize("name, written, value", SECRETS)
def test_a_secret_env_value_is_read_from_the_secret(name, written, value):
    plan = _plan(f"export {name}={written}\n{LAUNCH}\n")
    e = _env(plan)[name]
    assert (e.secret_name, e.secret_key, e.value) == (f"{plan.name}-env", name, "")
    [f] = _codes(plan, "P447")
    assert f.line == 5 and value not in f.message + (f.suggestion or "")


def test_pwd_itself_and_names_merely_ending_in_key_letters_are_no_secret():
    plan = _plan(f"export PWD=abcd1234\nexport MONKEY=banana12\nexport OLDPWD=xyz98765\n{LAUNCH}\n")
    assert _codes(plan, "P447") == []
    assert _env(plan)["MONKEY"].value == "banana12"


@pytest.mark.parametrize(
    "option, value",
    [
        ("--password", "hunter2secret"),
        ("--passwd", "hunter2secret"),
        ("--api-key", "Zx8Kp2Lm9Qr4Tv6Y"),
        ("--token", "Zm9vYmFyYmF6cXV4"),
        ("--secret", "s3cr3t-value"),
    ],
)
@pytest.mark.parametrize("joined", [False, True])
def test_a_secret_option_value_becomes_a_reference_to_the_secret(option, value, joined):
    arg = f"{option}={value}" if joined else f"{option} {value}"
    plan = _plan(f"{LAUNCH} {arg}\n")
    words = plan.command + plan.args
    assert not any(value in w for w in words)
    [f] = _codes(plan, "P447")
    name = f.message.split(" ", 1)[0]  # the variable the value is read from
    want = f"{option}=$({name})" if joined else f"$({name})"
    assert want in words and (not joined or option not in words)
    e = _env(plan)[name]
    assert (e.secret_name, e.secret_key) == (f"{plan.name}-env", name)


def test_a_url_password_in_the_command_is_replaced_where_it_stands():
    plan = _plan(f"{LAUNCH} --db postgres://trainer:Xk9vLq2Rz@db.internal:5432/metrics\n")
    [f] = _codes(plan, "P447")
    name = f.message.split(" ", 1)[0]
    assert f"postgres://trainer:$({name})@db.internal:5432/metrics" in plan.args


def test_a_variable_reference_given_to_a_secret_option_stays():
    plan = _plan(f"{LAUNCH} --token $HF_TOKEN --password-file /run/secrets/pw\n")
    assert _codes(plan, "P447") == []


# ---- P448: addresses, not versions nor run-time hosts ---------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        f"export APEX_VER=1.15.2.0\n{LAUNCH}\n",
        f"export CUDNN_VERSION=8.9.7.29\n{LAUNCH}\n",
        f"{LAUNCH} --tag v2.3.0.1\n",
        f"{LAUNCH} --requirement torch==2.1.0.1\n",
        f"{LAUNCH} --master_addr $(hostname)\n",
        f"{LAUNCH} --master_addr `/bin/hostname`\n",
        f"{LAUNCH} --dist-url tcp://`hostname`:23456\n",
    ],
)
def test_no_p448_on_versions_or_hosts_computed_at_run_time(body):
    assert _codes(_plan(body), "P448") == []


@pytest.mark.parametrize(
    "body, address",
    [
        (f"{LAUNCH} --master_addr 192.168.0.5\n", "192.168.0.5"),
        (f"{LAUNCH} --dist-url tcp://10.1.2.3:23456\n", "10.1.2.3"),
        (f"export REDIS_HOST=10.0.0.12\n{LAUNCH}\n", "10.0.0.12"),
        (f"export PARAM_SERVER=192.168.1.20:6379\n{LAUNCH}\n", "192.168.1.20"),
        (f"{LAUNCH} --master_addr node017\n", "node017"),
        ('MASTER_ADDR=10.1.2.3 bash -c "python train.py"\n', "10.1.2.3"),
    ],
)
def test_p448_on_an_address_where_a_host_goes(body, address):
    found = _codes(_plan(body), "P448")
    assert any(f"`{address}" in f.message for f in found), found


# ---- P445: what numNodes 1 does per runtime and launcher -----------------------------------------


def _hostfile(slots: int) -> list[tuple[str, int]]:
    """The hostfile of a one-node TrainJob on deepspeed-distributed: max(1-1, 1) = 1 node pod listed
    first, then the launcher (runLauncherAsNode), each with the runtime's slots."""
    return [("node-0", slots), ("launcher", slots)]


def _ranks_per_host(launcher: str, slots: int, np_: int | None) -> list[int]:
    """How the launcher spreads its ranks over that hostfile (see the module docstring)."""
    hosts = _hostfile(slots)
    if launcher == "deepspeed" or np_ is None:
        return [s for _, s in hosts]
    out, left = [], np_
    for _, s in hosts:  # by slot: fill each host in order
        out.append(min(left, s))
        left -= out[-1]
    return out


@pytest.mark.parametrize(
    "body, launcher, np_, slurm_world",
    [
        (
            'echo "$(hostname) slots=4" > hf\ndeepspeed --hostfile hf train.py --deepspeed ds.json\n',
            "deepspeed",
            None,
            4,
        ),
        ("mpirun -np 4 ./a.out\n", "mpirun", 4, 4),
    ],
)
def test_p445_says_what_the_hostfile_does(body, launcher, np_, slurm_world):
    head = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-node=4\n"
    conv = convert("job.sbatch", data=(head + body).encode("utf-8"))
    [f] = [f for f in conv.findings if f.code == "P445"]
    ranks = _ranks_per_host(launcher, 4, np_)
    if sum(ranks) == 2 * slurm_world:
        assert "world size doubles" in f.message
        assert "idle" not in f.message
    elif ranks[1] == 0:
        assert "runs on the worker pod" in f.message or "run on the worker pod" in f.message
        assert "launcher pod only runs mpirun" in f.message and "doubles" not in f.message
    assert "worker first, the launcher last" in f.message


def test_p445_without_np_doubles_and_a_site_runtime_is_not_guessed():
    from translator.launchers.intent import LaunchIntent
    from translator.plan.build import _Runtime, _one_node_mpi, runtimes

    shipped = _Runtime("deepspeed-distributed", runtimes.get("deepspeed-distributed"), "mpi", "img")
    no_np = LaunchIntent("mpi", "mpi", ("mpirun",), ("--hostfile", "/etc/mpi/hostfile", "./a.out"), 4)
    assert sum(_ranks_per_host("mpirun", 4, None)) == 8  # 2 hosts x 4 slots
    assert "world size doubles" in _one_node_mpi(no_np, shipped)
    spill = LaunchIntent("mpi", "mpi", ("mpirun",), ("-np", "6", "-npernode", "4", "./a.out"), 4)
    assert _ranks_per_host("mpirun", 4, 6) == [4, 2]
    assert "span the worker and the launcher" in _one_node_mpi(spill, shipped)
    site = _Runtime("my-mpi", None, "mpi", "img")
    assert "runLauncherAsNode" in _one_node_mpi(no_np, site) and "doubles" not in _one_node_mpi(no_np, site)


# ---- P449/L359: what container wrappers set inside the container ---------------------------------

IMG = "docker://nvcr.io/nvidia/pytorch:24.01-py3"


def test_apptainer_env_is_carried_and_a_secret_among_it_goes_to_the_secret():
    token = "hf_QmVnYXRpdmVUb2tlbkV4YW1wbGUxMjM0"
    plan = _plan(f"srun apptainer exec --nv --env HF_TOKEN={token},LOG_LEVEL=info {IMG} python train.py\n")
    env = _env(plan)
    assert env["LOG_LEVEL"].value == "info" and env["LOG_LEVEL"].secret_name is None
    assert (env["HF_TOKEN"].secret_name, env["HF_TOKEN"].value) == (f"{plan.name}-env", "")
    assert _codes(plan, "P449") and _codes(plan, "P447")
    assert not any(token in f.message for f in plan.findings)


@pytest.mark.parametrize(
    "wrapper", [f"apptainer exec --env-file secrets.env {IMG}", f"apptainer exec --env OTHER {IMG}"]
)
def test_what_a_wrapper_env_cannot_carry_is_a_warning(wrapper):
    [f] = _codes(_plan(f"srun {wrapper} python train.py\n"), "L359")
    assert f.severity == "warning" and f.line == 5


def test_shifter_and_podman_env_are_carried():
    shifter = _plan("srun shifter --image=docker:nvcr.io/nvidia/pytorch:24.01-py3 --env=MODE=fast python train.py\n")
    assert _env(shifter)["MODE"].value == "fast"
    podman = _plan("srun podman-hpc run -e MODE=slow nvcr.io/nvidia/pytorch:24.01-py3 python train.py\n")
    assert _env(podman)["MODE"].value == "slow"


def test_apptainerenv_exports_become_the_name_inside_the_container():
    key = "3f2a9c7e1b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a"
    plan = _plan(
        f"export SINGULARITYENV_WANDB_API_KEY={key}\nexport APPTAINERENV_DATA_DIR=/data/in\n"
        f"srun apptainer exec {IMG} python train.py\n"
    )
    env = _env(plan)
    assert env["DATA_DIR"].value == "/data/in" and "APPTAINERENV_DATA_DIR" not in env
    assert env["WANDB_API_KEY"].secret_name == f"{plan.name}-env"
    assert len(_codes(plan, "P449")) == 2


def test_without_a_container_the_prefixed_export_stays_as_written():
    plan = _plan(f"export APPTAINERENV_DATA_DIR=/data/in\n{LAUNCH}\n")
    assert _env(plan)["APPTAINERENV_DATA_DIR"].value == "/data/in" and _codes(plan, "P449") == []


# ---- the detector's own rules ---------------------------------------------------------------------


def test_option_secrets_and_wrapper_items():
    words = ["--password", "hunter2x", "--api-key=sk-abc12345", "--token", "$T", "--secret", "/run/s", "--pass", "no"]
    assert secrets.option_secrets(words) == [(1, "hunter2x"), (2, "sk-abc12345")]
    assert secrets.wrapper_env_items("A=1,B=x=y,C,9X=2") == [("A", "1"), ("B", "x=y"), ("C", None)]
    assert secrets.embedded_tokens("curl https://bob:hunter22@x.com/a") == ["hunter22"]
    assert secrets.embedded_tokens("curl https://bob:$PW@x.com/a") == []


def test_a_secret_option_inside_shell_text_is_read_from_the_secret_and_the_shell_stays_intact():
    # the whole body runs under `bash -c` (no launch line): the value is replaced inside the text by
    # "${NAME}", which bash expands from the container env (NAME reads the Secret)
    plan = _plan(
        'cd /tmp\nfor i in 1 2; do python train.py --password "hunter2secret" --api-key=Zx8Kp2Lm9Qr4Tv6Y; done\n'
    )
    text = "\n".join(plan.command + plan.args)
    assert "hunter2secret" not in text and "Zx8Kp2Lm9Qr4Tv6Y" not in text
    names = [f.message.split(" ", 1)[0] for f in _codes(plan, "P447")]
    assert len(names) == 2
    assert f'--password "${{{names[0]}}}" --api-key="${{{names[1]}}}"; done' in text


def test_a_wrapper_env_the_fallback_cannot_carry_says_so():
    # the whole body runs in the pod (a loop of steps); the container wrapper there runs its command directly,
    # so `--env` is not TrainJob env: L359, never "carried" (and the token still goes to the Secret, P447)
    token = "hf_QmVnYXRpdmVUb2tlbkV4YW1wbGUxMjM0"
    plan = _plan(f"for lr in 1 2; do\n  srun apptainer exec --env MODE=fast,HF_TOKEN={token} {IMG} python t.py\ndone\n")
    assert plan.launcher == "script"
    assert _codes(plan, "P449") == [] and "MODE" not in _env(plan)
    [f] = [f for f in _codes(plan, "L359") if "MODE" in f.message]
    assert "does not carry" in f.message and token not in f.message
    assert _codes(plan, "P447") and token not in "\n".join(plan.args)
