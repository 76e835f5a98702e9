"""`slurm2kf validate`: TrainJob documents checked against a TrainJob CRD (schema + CEL) and the
Kubeflow Trainer webhook rules.  Heavy libraries (jsonschema, cel-python, PyYAML) load on first use."""
from translator.validate.validator import Problem, Result, validate_documents, validate_text  # noqa: F401
