"""`slurm2kf simulate`: which processes a job starts on Slurm and on Kubeflow Trainer, and whether they match.

Stages (each a module): the Slurm side (`slurm_side`) and the Kubeflow side (`kubeflow_pods` turns a TrainJob
into the pods the Trainer and the kubelet would start) both run their commands in the sandbox (`sandbox`) with
recording stubs; `verdict` compares the two process lists. Records are plain dataclasses (`model`).
"""
