"""`slurm2kf validate`: TrainJob documents checked against a TrainJob CRD (schema + CEL) and the
Kubeflow Trainer webhook rules.  Heavy libraries (jsonschema, cel-python, PyYAML) load on first use."""

# The package's API, loaded on first use: `convert` imports translator.validate.rules (name checks)
# and should not pay for the validator itself.
__all__ = ["Problem", "Result", "validate_documents", "validate_text"]


def __getattr__(name):
    if name in __all__:
        from translator.validate import validator

        return getattr(validator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
