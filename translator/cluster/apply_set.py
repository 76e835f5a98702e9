"""The apply set of a `migrate` output tree: the TrainJob YAML files its kustomizations list
(what `kubectl apply -k OUT` would send), read without kustomize: `resources` entries are files or
folders holding their own kustomization.yaml, as `migrate` writes them."""

from __future__ import annotations

import os

KUSTOMIZATION = "kustomization.yaml"


class ApplySetError(Exception):
    pass


def apply_set(out: str) -> list[str]:
    """YAML files in kustomization order (depth first); raises ApplySetError for a broken tree."""
    import yaml

    root = os.path.realpath(out)
    files: list[str] = []
    seen = set()

    def walk(folder: str) -> None:
        kfile = os.path.join(folder, KUSTOMIZATION)
        if kfile in seen:
            return
        seen.add(kfile)
        try:
            with open(kfile, encoding="utf-8") as fh:
                data = yaml.safe_load(fh) or {}
        except OSError as exc:
            raise ApplySetError(f"{kfile}: cannot read: {exc.strerror or exc}") from None
        except yaml.YAMLError as exc:
            raise ApplySetError(f"{kfile}: not YAML ({str(exc).splitlines()[0]})") from None
        resources = data.get("resources") if isinstance(data, dict) else None
        for res in resources or ():
            path = os.path.realpath(os.path.join(folder, str(res)))
            if os.path.commonpath([root, path]) != root:  # never follow a path out of the tree
                raise ApplySetError(f"{kfile}: resource {res!r} is outside {out}")
            if os.path.isdir(path):
                walk(path)
            else:
                files.append(path)

    walk(root)
    return files
