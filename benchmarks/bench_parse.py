"""Reader throughput: how many realistic job scripts per second one core parses, and a 10 MB file.

    .venv/bin/python benchmarks/bench_parse.py [--seconds 3] [--big-mb 10]

Prints (CPU time of this process, so other load on the machine does not count):
  * the time to import the reader and its block parser (generated LALR tables, no parser generator);
  * scripts/s for benchmarks/realistic_40_lines.sbatch (bytes -> Script: source checks, header,
    directive tokenizer, body lexer, LALR block grammar, words, classification);
  * scripts/s for a block-heavy 45-line script (if/elif/else, loops, case, functions, heredoc);
  * the time and peak memory for a ~10 MB file made of repeated script bodies.
This is a measurement, not a test: it never fails.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

BLOCK_HEAVY = b"""#!/bin/bash
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
set -euo pipefail
module purge; module load cuda/12.1 nccl
source ~/miniconda3/etc/profile.d/conda.sh
conda activate train
export NCCL_DEBUG=INFO OMP_NUM_THREADS=8
head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
cd "$SLURM_SUBMIT_DIR" || { echo "no dir"; exit 1; }
if [ -n "${RESUME:-}" ]; then
  echo resume
elif [ -f ckpt.pt ]; then echo found
else
  srun python prepare.py --lr 0.1
fi
for i in 1 2 3; do
  echo "$i"
done
while read -r l; do echo "$l"; done < hosts.txt
case "$MODE" in
  a|b) echo ab ;;
  *) torchrun --nproc_per_node 8 \\
       train.py ;;
esac
run() {
  srun --ntasks-per-node=1 bash -c 'torchrun --node_rank=$SLURM_NODEID x.py'
}
function other {
  deepspeed --hostfile h x.py
}
cat > gen.sbatch <<'EOF'
#!/bin/bash
#SBATCH -N 4
srun hostname
EOF
sbatch gen.sbatch
( cd x && make ) > log 2>&1 &
OMP=1 nohup python -u train.py &> out.log &
trap 'scontrol requeue $SLURM_JOB_ID' USR1
run
other
wait
echo "done"
"""


def throughput(read_script, data: bytes, seconds: float) -> float:
    read_script(data, "warmup.sbatch")
    n = 0
    start = time.process_time()
    while True:
        for _ in range(50):
            read_script(data, "bench.sbatch")
        n += 50
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return n / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="CPU seconds per throughput figure")
    ap.add_argument("--big-mb", type=float, default=10.0, help="size of the big file in MB (0 = skip)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    from translator.read import read_script
    import translator.read.block_parser  # noqa: F401  (what a script with blocks loads)

    print(f"import reader + block parser: {1000 * (time.perf_counter() - t0):.0f} ms (wall, cold process)")

    realistic = (HERE / "realistic_40_lines.sbatch").read_bytes()
    lines = realistic.count(b"\n")
    rate = throughput(read_script, realistic, args.seconds)
    print(f"realistic {lines}-line script: {rate:,.0f} scripts/s on one core ({1e6 / rate:.0f} us each)")
    heavy_lines = BLOCK_HEAVY.count(b"\n")
    rate = throughput(read_script, BLOCK_HEAVY, args.seconds)
    print(f"block-heavy {heavy_lines}-line script: {rate:,.0f} scripts/s on one core ({1e6 / rate:.0f} us each)")

    if args.big_mb > 0:
        body = realistic.split(b"set -euo pipefail\n", 1)[1]
        target = int(args.big_mb * 1024 * 1024)
        big = realistic + body * ((target - len(realistic)) // len(body) + 1)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        w0, c0 = time.perf_counter(), time.process_time()
        script = read_script(big, "big.sbatch")
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(
            f"{len(big) / 1e6:.1f} MB file ({script.line_count:,} lines, {len(script.body):,} top-level statements): "
            f"{cpu:.2f} s CPU, {wall:.2f} s wall, peak RSS {peak / 1024:.0f} MiB (+{(peak - before) / 1024:.0f})"
        )
    print(f"python {sys.version.split()[0]}, pid {os.getpid()}")


if __name__ == "__main__":
    main()
