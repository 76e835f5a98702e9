"""Launch-line analysis: Script + SlurmJob -> LaunchIntent (how the training starts, per node).

launchline.py finds the launch lines of the body, picks the one that starts the training, unwraps
what is structural (srun, container wrappers, `env A=B`, `bash -c`, `eval`) and hands the command to
the first family of registry.FAMILIES whose `matches` accepts it:

  torchrun.py     torchrun / python -m torch.distributed.run|launch (alone or under srun)
  accelerate.py   accelerate launch
  deepspeed.py    deepspeed
  mpi.py          mpirun / mpiexec / srun --mpi / srun of a compiled program
  jax.py          python programs using jax.distributed
  srun_tasks.py   srun python train.py, one task per process
  python.py       a program run once (plain python)
  container.py    apptainer/singularity exec, pyxis --container-image (wrapping any of the above)
  script.py       anything else: the body under bash -c with a Slurm-compatibility prologue

This package module stays light (the reader imports registry.py on every run); the detection code
is imported on first use.
"""

from __future__ import annotations

_LAUNCHLINE = (
    "detect",
    "dispatch",
    "is_launch",
    "is_aux",
    "is_env_setup",
    "strip_wrappers",
    "_walk",
    "LAUNCHERS",
    "AUX_PROGRAMS",
)


def __getattr__(name: str):
    if name in _LAUNCHLINE:
        from translator.launchers import launchline

        return getattr(launchline, name)
    raise AttributeError(f"module 'translator.launchers' has no attribute {name!r}")
