"""slurm2kf: read sbatch scripts as Slurm does; emit Kubeflow Trainer TrainJobs."""

__version__ = "0.1.0"
