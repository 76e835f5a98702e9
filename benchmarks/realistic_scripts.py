#!/usr/bin/env python3
"""Real-sized sbatch scripts for benchmarks: seeded, deterministic, shaped like the scripts teams keep.

The sizes follow a sample of 291 public sbatch scripts (issue 13): median 1.5 KB, mean 2.5 KB,
90th percentile 4.5 KB, 99th 13.6 KB, largest 43 KB. `script(i)` draws the size from that
distribution (piecewise log-linear between the quantiles) and fills it with what real scripts do:
banners and comment paragraphs, a header of directives (some with trailing comments), a preamble of
`module` lines, conda/venv activation and long runs of `export`s, helper functions, `for`/`if`/`case`
blocks, here-documents writing config files, pip installs and several srun steps. About half of the
scripts have one training launch the launcher families recognise; the others chain several steps,
loop over srun or launch from inside shell logic, so they end up in the script fallback (the whole
body under `bash -c`), as about half of the real ones do.

    .venv/bin/python benchmarks/realistic_scripts.py [--scripts 1000] [--out DIR]   # size table (+ files)
"""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

# (cumulative probability, bytes): the quantiles of the public sample; the knots below the median
# and at 0.75 are chosen so that the mean comes out at 2.5 KB.
QUANTILES = ((0.0, 420), (0.1, 760), (0.25, 1050), (0.5, 1500), (0.75, 2400), (0.9, 4500), (0.99, 13600), (1.0, 44500))
TARGETS = {"median": 1536, "mean": 2560, "p90": 4608, "p99": 13926, "max": 44032}  # 1.5/2.5/4.5/13.6/43 KB

TEAMS = ("nlp", "vision", "speech", "rl", "climate", "bio", "hpcbench", "recsys")
MODULES = (
    "cuda/12.1",
    "cuda/11.8",
    "cudnn/8.9.2",
    "nccl/2.18.3",
    "gcc/11.2.0",
    "openmpi/4.1.5",
    "python/3.10",
    "anaconda3/2023.03",
    "git/2.40",
    "cmake/3.26",
    "hdf5/1.14",
    "intel-mkl/2023",
    "ucx/1.14",
    "singularity/3.11",
    "ffmpeg/6.0",
    "libsndfile/1.2",
    "netcdf/4.9",
    "boost/1.82",
)
EXPORT_NAMES = (
    "NCCL_DEBUG",
    "NCCL_IB_DISABLE",
    "NCCL_SOCKET_IFNAME",
    "NCCL_P2P_LEVEL",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "HF_HOME",
    "HF_DATASETS_CACHE",
    "TRANSFORMERS_CACHE",
    "TORCH_HOME",
    "WANDB_PROJECT",
    "WANDB_MODE",
    "WANDB_DIR",
    "PYTHONUNBUFFERED",
    "CUDA_LAUNCH_BLOCKING",
    "TORCH_DISTRIBUTED_DEBUG",
    "TOKENIZERS_PARALLELISM",
    "XDG_CACHE_HOME",
    "DATA_DIR",
    "CKPT_DIR",
    "OUTPUT_DIR",
    "LOG_DIR",
    "CONFIG",
    "SEED",
    "LR",
    "BATCH_SIZE",
    "EPOCHS",
    "MODEL_NAME",
    "RUN_NAME",
    "MASTER_PORT",
    "NCCL_ASYNC_ERROR_HANDLING",
    "PYTHONPATH",
    "LD_LIBRARY_PATH",
    "PATH",
    "TMPDIR",
    "SCRATCH",
    "PROJECT",
    "EXP_NAME",
    "NUM_WORKERS",
    "GRAD_ACCUM",
)
PIP = (
    "transformers==4.36.2",
    "datasets>=2.14",
    "accelerate",
    "wandb",
    "einops",
    "sentencepiece",
    "deepspeed==0.12.6",
    "flash-attn --no-build-isolation",
    "torchmetrics",
    "hydra-core==1.3.2",
    "timm",
    "peft",
    "bitsandbytes",
    "tensorboard",
    "omegaconf",
    "xformers",
    "git+https://github.com/org/lib.git",
)
WORDS = (
    "baseline",
    "ablation",
    "sweep",
    "pretrain",
    "finetune",
    "eval",
    "resume",
    "large",
    "small",
    "warmup",
    "cosine",
    "linear",
    "mixed",
    "bf16",
    "fp16",
    "lora",
    "full",
    "distill",
    "curriculum",
    "augment",
)


def quantile_size(u: float) -> int:
    for (p0, s0), (p1, s1) in zip(QUANTILES, QUANTILES[1:]):
        if u <= p1:
            t = (u - p0) / (p1 - p0) if p1 > p0 else 0.0
            return int(math.exp(math.log(s0) + t * (math.log(s1) - math.log(s0))))
    return QUANTILES[-1][1]


class _Gen:
    def __init__(self, i: int, seed: int):
        self.i = i
        self.r = random.Random(seed * 1_000_003 + i)
        self.team = TEAMS[i % len(TEAMS)]
        self.name = f"{self.team}-{self.r.choice(WORDS)}-{i:05d}"
        self.out: list[str] = []
        self.size = 0
        self.fn_names: list[str] = []
        self.steps = False  # the script chains several steps (it ends up in the script fallback)

    def add(self, text: str) -> None:
        self.out.append(text)
        self.size += len(text.encode("utf-8"))

    # ---- pieces ----------------------------------------------------------------------------------
    def banner(self, title: str) -> None:
        r = self.r
        style = r.randrange(3)
        if style == 0:
            bar = "#" * r.choice((40, 60, 78))
            self.add(f"{bar}\n# {title}\n{bar}\n")
        elif style == 1:
            self.add(f"# ---------------- {title} ----------------\n")
        else:
            self.add(f"\n## {title}\n")

    def paragraph(self) -> None:
        r = self.r
        lines = []
        for _ in range(r.randint(1, 5)):
            lines.append(
                "# "
                + " ".join(
                    r.choice(
                        WORDS
                        + (
                            "the",
                            "we",
                            "use",
                            "on",
                            "node",
                            "for",
                            "run",
                            "this",
                            "job",
                            "data",
                            "checkpoint",
                            "GPU",
                            "NOTE:",
                            "TODO:",
                        )
                    )
                    for _ in range(r.randint(4, 12))
                )
            )
        self.add("\n".join(lines) + "\n")

    def header(self, nodes: int, gpus: int) -> None:
        r = self.r
        self.add(r.choice(("#!/bin/bash\n", "#!/bin/bash -l\n", "#!/usr/bin/env bash\n", "#!/bin/bash\n")))
        if r.random() < 0.5:
            self.banner(f"{self.name}: {r.choice(WORDS)} {r.choice(WORDS)} job")
        d = [
            f"--job-name={self.name}",
            f"--nodes={nodes}",
            f"--ntasks-per-node={r.choice((1, gpus))}",
            f"--gres=gpu:{gpus}" if r.random() < 0.6 else f"--gpus-per-node={gpus}",
            f"--cpus-per-task={r.choice((4, 8, 16, 32))}",
            f"--mem={r.choice(('0', '64G', '128G', '480G'))}",
            f"--time={r.choice(('00:30:00', '04:00:00', '12:00:00', '1-00:00:00', '2-00:00:00'))}",
            f"--partition={r.choice(('gpu', 'a100', 'h100', 'debug', 'long'))}",
            "--output=logs/%x-%j.out",
            "--error=logs/%x-%j.err",
        ]
        if r.random() < 0.5:
            d.append(f"--account={self.team}-{r.randint(100, 999)}")
        if r.random() < 0.3:
            d.append("--exclusive")
        if r.random() < 0.2:
            d.append("--signal=B:USR1@120")
        if r.random() < 0.2:
            d.append(f"--mail-type=END,FAIL\n#SBATCH --mail-user={self.team}@example.org")
        if r.random() < 0.15:
            d.append(f"--array=0-{r.randint(3, 31)}%{r.randint(2, 8)}")
        if r.random() < 0.2:
            d.append(f"--constraint={r.choice(('a100', 'h100&ib', 'gpu80g'))}")
        for opt in d:
            comment = f"   # {r.choice(WORDS)} {r.choice(WORDS)}" if r.random() < 0.15 else ""
            self.add(f"#SBATCH {opt}{comment}\n")
        if r.random() < 0.03:  # a heterogeneous job: more components after `#SBATCH hetjob`
            for _ in range(r.randint(1, 3)):
                self.add(
                    f"#SBATCH hetjob\n#SBATCH --nodes={r.choice((1, 2))} --ntasks-per-node=1 "
                    f"--cpus-per-task={r.choice((4, 8))} --mem={r.choice(('16G', '32G'))}\n"
                )
        self.add("\n")

    def preamble(self, big: bool) -> None:
        r = self.r
        if r.random() < 0.6:
            self.add(r.choice(("set -euo pipefail\n", "set -e\n", "set -x\n", "set -eo pipefail\n")))
        if r.random() < 0.4:
            self.banner("environment")
        if r.random() < 0.7:
            self.add("module purge\n")
        mods = r.sample(MODULES, r.randint(2, 8 if big else 5))
        if r.random() < 0.5:
            self.add("module load " + " ".join(mods) + "\n")
        else:
            self.add("".join(f"module load {m}\n" for m in mods))
        env = f"{self.team}-{r.choice(WORDS)}"
        pick = r.randrange(4)
        if pick == 0:
            self.add(f'source "$HOME/miniconda3/etc/profile.d/conda.sh"\nconda activate {env}\n')
        elif pick == 1:
            self.add(f"source /scratch/$USER/venvs/{env}/bin/activate\n")
        elif pick == 2:
            self.add(f'eval "$(conda shell.bash hook)"\nconda activate {env}\n')
        n_exports = r.randint(3, 12 if not big else 30)
        for name in r.sample(EXPORT_NAMES, min(n_exports, len(EXPORT_NAMES))):
            self.add(f"export {name}={self.value(name)}\n")

    def value(self, name: str) -> str:
        r = self.r
        if name in ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH"):
            return f'"/opt/{self.team}/{r.choice(WORDS)}/bin:${name}"'
        if name.endswith(("DIR", "HOME", "CACHE", "SCRATCH", "TMPDIR")):
            return (
                f'"/scratch/$USER/{self.team}/{r.choice(WORDS)}-$SLURM_JOB_ID"'
                if r.random() < 0.5
                else f"/gpfs/{self.team}/{r.choice(WORDS)}"
            )
        if name in (
            "SEED",
            "EPOCHS",
            "BATCH_SIZE",
            "NUM_WORKERS",
            "GRAD_ACCUM",
            "OMP_NUM_THREADS",
            "MKL_NUM_THREADS",
            "MASTER_PORT",
        ):
            return str(r.choice((1, 4, 8, 16, 32, 64, 29500, 12345)))
        if name == "LR":
            return r.choice(("3e-4", "1e-5", "0.001", "5e-5"))
        return r.choice(
            (
                "INFO",
                "WARN",
                "0",
                "1",
                "offline",
                f"{self.team}-{r.choice(WORDS)}",
                '"$SLURM_JOB_NAME-$SLURM_JOB_ID"',
                "ib0",
                "NVL",
                "true",
            )
        )

    def functions(self) -> None:
        r = self.r
        self.add('log() {\n    echo "[$(date +%H:%M:%S)] $*"\n}\n')
        self.fn_names.append("log")
        if r.random() < 0.5:
            self.add(
                'cleanup() {\n    log "cleaning up $TMPDIR"\n    rm -rf "${TMPDIR:?}"/* || true\n}\ntrap cleanup EXIT\n'
            )
        if r.random() < 0.3:
            self.add(
                "function check_gpu {\n    nvidia-smi --query-gpu=name,memory.total --format=csv\n"
                '    if [ $? -ne 0 ]; then\n        log "no GPU"\n        exit 1\n    fi\n}\n'
            )

    def heredoc(self, lines: int) -> None:
        r = self.r
        kind = r.randrange(3)
        delim = r.choice(("EOF", "EOT", "END", "'EOF'", "YAML"))
        target = f"$RUN_DIR/{r.choice(('config', 'hparams', 'ds_config', 'accelerate'))}." + (
            "json" if kind == 1 else "yaml"
        )
        body = []
        if kind == 1:
            body.append("{")
            for k in range(lines):
                body.append(
                    f'  "{r.choice(WORDS)}_{k}": {r.choice(("true", "false", "1e-4", "128", chr(34) + "auto" + chr(34)))},'
                )
            body.append('  "train_batch_size": "auto"\n}')
        else:
            for k in range(lines):
                ind = "  " * r.randrange(3)
                body.append(
                    f"{ind}{r.choice(WORDS)}_{k}: {r.choice(('${SEED}', '$LR', '0.1', 'true', '[1, 2, 4]', self.team))}"
                )
        self.add(f'cat > "{target}" <<{delim}\n' + "\n".join(body) + f"\n{delim.strip(chr(39))}\n")

    def loop(self) -> None:
        r = self.r
        var = r.choice(("seed", "ds", "lr", "split", "f"))
        items = " ".join(r.choice(WORDS) if var != "seed" else str(r.randint(0, 99)) for _ in range(r.randint(2, 6)))
        inner = r.randrange(3)
        if inner and not self.steps and r.random() < 0.85:
            inner = 3  # a single-launch script keeps its loops free of other programs to launch
        self.add(f"for {var} in {items}; do\n")
        if inner == 0:
            self.add(f'    log "{var}=${var}"\n    mkdir -p "$OUTPUT_DIR/${var}"\n')
        elif inner == 1:
            self.add(f'    srun --ntasks=1 --exclusive python preprocess.py --{var} "${var}" --out "$DATA_DIR" &\n')
        elif inner == 2:
            self.add(
                f'    if [ -f "$CKPT_DIR/${var}/last.pt" ]; then\n        log "skip ${var}"\n        continue\n'
                f"    fi\n    python scripts/prepare.py --{var} ${var}\n"
            )
        else:
            self.add(f'    tar -xf "/gpfs/{self.team}/archives/${var}.tar" -C "$TMPDIR" || exit 1\n')
        self.add("done\n")
        if inner == 1:
            self.add("wait\n")

    def conditional(self) -> None:
        r = self.r
        kind = r.randrange(3)
        if kind == 0:
            self.add(
                'if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then\n    TASK=0\nelse\n    TASK=$SLURM_ARRAY_TASK_ID\nfi\n'
            )
        elif kind == 1:
            self.add(
                'if [[ "$SLURM_JOB_PARTITION" == "debug" ]]; then\n    export EPOCHS=1\n'
                'elif [[ -n "${RESUME:-}" ]]; then\n    EXTRA="--resume $CKPT_DIR/last.pt"\nfi\n'
            )
        else:
            self.add(
                'case "${SLURM_ARRAY_TASK_ID:-0}" in\n'
                + "".join(f"    {k}) CONFIG=configs/{r.choice(WORDS)}_{k}.yaml ;;\n" for k in range(r.randint(2, 6)))
                + '    *) echo "unknown task"; exit 1 ;;\nesac\n'
            )

    def misc(self) -> None:
        r = self.r
        pick = r.randrange(6)
        if pick == 0:
            self.add('echo "Job $SLURM_JOB_ID on $(hostname) at $(date)"\necho "nodes: $SLURM_JOB_NODELIST"\n')
        elif pick == 1:
            self.add(f'mkdir -p "$LOG_DIR" "$CKPT_DIR"\ncd /gpfs/{self.team}/code || exit 1\n')
        elif pick == 2:
            self.add("nvidia-smi\n" if r.random() < 0.5 else "srun hostname\n")
        elif pick == 3:
            self.add(
                'head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n'
                'head_ip=$(srun --nodes=1 --ntasks=1 -w "$head_node" hostname --ip-address)\n'
            )
        elif pick == 4:
            self.add(f"pip install --user {r.choice(PIP)}\n")
        else:
            self.add(f'rsync -a /gpfs/{self.team}/datasets/{r.choice(WORDS)}/ "$TMPDIR/data/"\n')

    def launch(self, nodes: int, gpus: int, fallback: bool) -> None:
        r = self.r
        cfg = f"configs/{r.choice(WORDS)}.yaml"
        args = " ".join(
            f"--{r.choice(WORDS)} {r.choice(('1', '$LR', '$SEED', 'true', '0.1'))}" for _ in range(r.randint(1, 4))
        )
        fam = r.randrange(5)
        if fam == 0:
            text = (
                f'srun torchrun \\\n    --nnodes "$SLURM_NNODES" --nproc_per_node {gpus} \\\n'
                f'    --rdzv_id "$SLURM_JOB_ID" --rdzv_backend c10d --rdzv_endpoint "$head_ip:29500" \\\n'
                f"    train.py --config {cfg} {args}\n"
            )
        elif fam == 1:
            text = f'srun python train.py --config {cfg} {args} --output_dir "$OUTPUT_DIR"\n'
        elif fam == 2:
            text = f"deepspeed --num_gpus {gpus} train.py --deepspeed ds_config.json {args}\n"
        elif fam == 3:
            text = (
                f"accelerate launch --num_processes $((SLURM_NNODES * {gpus})) --num_machines $SLURM_NNODES "
                f"train.py --config {cfg} {args}\n"
            )
        else:
            text = f"python -u train.py {args} --config {cfg}\n"
        if fallback:
            how = r.randrange(3)
            if how == 0:  # several training steps
                self.add(text)
                self.add(f'srun python evaluate.py --ckpt "$CKPT_DIR/last.pt" {args}\n')
            elif how == 1:  # launches in a loop
                self.add("for seed in 1 2 3; do\n    " + text.replace("\\\n    ", "") + "done\n")
            else:  # launch inside shell logic
                self.add(f'if [ "$TASK" -eq 0 ]; then\n    {text}else\n    srun python finetune.py {args}\nfi\n')
        else:
            self.add(text)
        if r.random() < 0.5:
            self.add('log "done: exit $?"\n' if self.fn_names else 'echo "done at $(date)"\n')


def script(i: int, seed: int = 1322) -> str:
    """The i-th script of the set (deterministic for (i, seed))."""
    g = _Gen(i, seed)
    r = g.r
    target = quantile_size(r.random())
    nodes = r.choice((1, 1, 2, 4, 8))
    gpus = r.choice((1, 2, 4, 8))
    fallback = r.random() < 0.45
    g.steps = fallback
    big = target > 3000
    g.header(nodes, gpus)
    if r.random() < 0.4:
        g.paragraph()
    g.preamble(big)
    if target > 1800 or r.random() < 0.3:
        g.functions()
    tail_budget = 300
    fillers = (
        g.loop,
        g.conditional,
        g.misc,
        g.misc,
        g.paragraph,
        g.banner_section,
        g.heredoc_section,
        g.export_run,
        g.pip_run,
    )
    while g.size < target - tail_budget:
        r.choice(fillers)()
    g.launch(nodes, gpus, fallback)
    return "".join(g.out)


def _banner_section(self) -> None:
    self.banner(f"{self.r.choice(WORDS)} {self.r.choice(WORDS)}")


def _heredoc_section(self) -> None:
    self.heredoc(self.r.choice((4, 8, 12, 20, 40)))


def _export_run(self) -> None:
    for k in range(self.r.randint(2, 10)):
        name = self.r.choice(EXPORT_NAMES)
        self.add(f"export {name}_{k}={self.value(name)}\n")


def _pip_run(self) -> None:
    if self.r.random() < 0.5:
        self.add("pip install " + " ".join(self.r.sample(PIP[:-1], self.r.randint(2, 6))) + "\n")
    else:
        for spec in self.r.sample(PIP, self.r.randint(2, 5)):
            self.add(f"pip install -q {spec}\n")


_Gen.banner_section = _banner_section
_Gen.heredoc_section = _heredoc_section
_Gen.export_run = _export_run
_Gen.pip_run = _pip_run


def sizes_table(sizes: list[int]) -> str:
    """Median, mean, p90, p99 and max of `sizes` next to the targets of the public sample."""
    s = sorted(sizes)
    n = len(s)

    def q(p):
        return s[min(n - 1, int(p * n))]

    got = {"median": q(0.5), "mean": sum(s) / n, "p90": q(0.9), "p99": q(0.99), "max": s[-1]}
    rows = ["           " + "".join(f"{k:>9}" for k in got)]
    rows.append("generated  " + "".join(f"{got[k] / 1024:>7.1f}KB" for k in got))
    rows.append("public     " + "".join(f"{TARGETS[k] / 1024:>7.1f}KB" for k in got))
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scripts", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1322)
    ap.add_argument("--out", help="also write the scripts into this folder")
    args = ap.parse_args()
    texts = [script(i, args.seed) for i in range(args.scripts)]
    sizes = [len(t.encode("utf-8")) for t in texts]
    lines = sorted(t.count("\n") for t in texts)
    print(sizes_table(sizes))
    print(f"lines: median {lines[len(lines) // 2]}, p90 {lines[int(0.9 * len(lines))]}, max {lines[-1]}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for i, t in enumerate(texts):
            (out / f"job{i:05d}.sbatch").write_text(t, encoding="utf-8")


if __name__ == "__main__":
    main()
