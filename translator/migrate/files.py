"""Writing outputs safely: atomic replace, compare-before-write, the manifest, kustomizations.

Every file goes through a temporary file in the same directory and `os.replace`, so a reader (or a
run killed half-way) only ever sees the old file or the new one. Files whose content would not change
are not touched (mtime kept), which makes re-running idempotent.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Callable, Dict, IO, Iterable, List, Optional, Tuple

MANIFEST_NAME = ".slurm2kf-migrate.json"
MANIFEST_FORMAT = "slurm2kf-migrate"
TMP_TAG = ".slurm2kf-tmp"            # temporary files: ".<name>.<pid>.<n>.slurm2kf-tmp"
KUSTOMIZATION = "kustomization.yaml"
REPORT_BASENAME = "slurm2kf-report"
WRITTEN = "written"
UNCHANGED = "unchanged"

_counter = [0]
_FOLDERS_MADE: set = set()          # output folders this process has made (or found) already
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str) -> Optional[str]:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def _tmp_path(path: str) -> str:
    _counter[0] += 1
    d, base = os.path.split(path)
    return os.path.join(d, f".{base}.{os.getpid()}.{_counter[0]}{TMP_TAG}")


def same_content(path: str, data: bytes) -> bool:
    try:
        st = os.stat(path)
        if st.st_size != len(data):
            return False
        with open(path, "rb") as fh:
            return fh.read() == data
    except OSError:
        return False


def write_if_changed(path: str, data: bytes, check: bool = False) -> str:
    """Write `data` to `path` atomically unless the file already holds it. Returns WRITTEN/UNCHANGED.

    In check mode nothing is written; the return value says whether it would be.
    """
    if same_content(path, data):
        return UNCHANGED
    if check:
        return WRITTEN
    folder = os.path.dirname(path) or "."
    if folder not in _FOLDERS_MADE:              # one makedirs per folder and process, not per file
        os.makedirs(folder, exist_ok=True)
        _FOLDERS_MADE.add(folder)
    tmp = _tmp_path(path)
    try:
        try:
            fd = os.open(tmp, _CREATE_FLAGS, 0o644)
        except FileNotFoundError:                # the folder went away since: make it again
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, _CREATE_FLAGS, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return WRITTEN


class _HashingText:
    """A text sink that only hashes (check mode: compare without writing)."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()

    def write(self, s: str) -> int:
        self.h.update(s.encode("utf-8"))
        return len(s)


def write_stream_if_changed(path: str, produce: Callable[[IO[str]], None], check: bool = False) -> Tuple[str, str]:
    """Stream a large text file (reports) through `produce(out)`; same contract as write_if_changed.

    Returns (WRITTEN|UNCHANGED, sha256 of the content).
    """
    if check:
        sink = _HashingText()
        produce(sink)
        digest = sink.h.hexdigest()
        return (UNCHANGED if sha256_file(path) == digest else WRITTEN), digest
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = _tmp_path(path)
    h = hashlib.sha256()
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            class _Tee:
                def write(self, s: str) -> int:
                    h.update(s.encode("utf-8"))
                    return fh.write(s)
            produce(_Tee())
        digest = h.hexdigest()
        if sha256_file(path) == digest:
            os.unlink(tmp)
            return UNCHANGED, digest
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return WRITTEN, digest


def sweep_temp_files(root: str) -> int:
    """Remove temporary files a killed run left behind. Returns how many."""
    n = 0
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            if f.endswith(TMP_TAG) and f.startswith("."):
                try:
                    os.unlink(os.path.join(dirpath, f))
                    n += 1
                except OSError:
                    pass
    return n


# ---- manifest ---------------------------------------------------------------------------------

def read_manifest(out_dir: str) -> Optional[dict]:
    """The manifest of a previous run, {} when unreadable but present, None when absent."""
    path = os.path.join(out_dir, MANIFEST_NAME)
    if not os.path.exists(path):
        return None
    try:
        with open(path, "r", encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        return {}
    return data


def manifest_bytes(outputs: Dict[str, str], scripts: Dict[str, List[str]], renamed: List[str],
                   version: str) -> bytes:
    data = {
        "format": MANIFEST_FORMAT,
        "tool": "slurm2kf",
        "version": version,
        "outputs": dict(sorted(outputs.items())),
        "scripts": dict(sorted(scripts.items())),
        "renamed": sorted(renamed),
    }
    return (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


# ---- kustomization ----------------------------------------------------------------------------

def kustomizations(yaml_outputs: Iterable[str]) -> Dict[str, List[str]]:
    """Folder ('' = root) -> sorted resources: its TrainJob YAML files, then subfolders that have any.

    The root folder always gets one, so `kubectl apply -k OUT` works whatever the tree holds.
    """
    files: Dict[str, List[str]] = {"": []}
    subdirs: Dict[str, set] = {"": set()}
    for rel in yaml_outputs:
        d, base = rel.rsplit("/", 1) if "/" in rel else ("", rel)
        files.setdefault(d, []).append(base)
        # register the folder chain up to the root
        child = d
        while child:
            parent, name = child.rsplit("/", 1) if "/" in child else ("", child)
            subdirs.setdefault(parent, set()).add(name)
            files.setdefault(parent, [])
            child = parent
    out: Dict[str, List[str]] = {}
    for d in files:
        out[d] = sorted(files[d]) + sorted(subdirs.get(d, ()))
    return out


def kustomization_bytes(resources: List[str]) -> bytes:
    lines = ["# Generated by slurm2kf migrate: the TrainJobs of this folder and its subfolders.",
             "apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization"]
    if resources:
        lines.append("resources:")
        lines.extend(f"- {json.dumps(r, ensure_ascii=False)}" for r in resources)
    else:
        lines.append("resources: []")
    return ("\n".join(lines) + "\n").encode("utf-8")
