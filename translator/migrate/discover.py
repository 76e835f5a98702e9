"""Finding job scripts in a source tree.

Discovery walks the tree (sorted, so every run sees the same order), prunes VCS folders, the output
folder and `--exclude` globs, follows symlinks safely, and hands candidate files to the workers,
which decide by content (`is_job_script`) whether a file is a Slurm job script: a `#!` first line and
an `#SBATCH`/`#SLURM` line in the header, never the file extension.
"""
from __future__ import annotations

import fnmatch
import os
import re
import stat
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

from translator.report.model import SkippedFile

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", "CVS"})
DEFAULT_MAX_SIZE = 1 << 20          # 1 MiB: far above any job script
# Extensions dropped from output names when no sibling shares the stem.
SCRIPT_EXTENSIONS = (".sbatch", ".slurm", ".sh", ".bash", ".job", ".batch", ".sub", ".submit")

# A directive-looking line in the header (`# SBATCH` too: the converter then says sbatch ignores it).
_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(?:SBATCH|SLURM)\b", re.M)


@dataclass(frozen=True)
class Candidate:
    rel: str            # relative path in the source tree, '/' separated
    path: str           # path to open
    out_stem: str       # output base name relative to OUT ('/' separated), without .trainjob.*


Found = Union[Candidate, SkippedFile]


def is_job_script(data: bytes) -> bool:
    """`#!` first line and a directive line in the header (before the first command line)."""
    if not data.startswith(b"#!"):
        return False
    head = data[:65536]
    end = len(head)
    # The header ends at the first line that is neither blank nor a comment.
    for m in re.finditer(rb"^[ \t]*[^#\s\r\n][^\n]*$", head, re.M):
        end = m.start()
        break
    return _DIRECTIVE.search(head, 0, end) is not None


def looks_binary(data: bytes) -> bool:
    return b"\0" in data[:8192]


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    base = rel.rsplit("/", 1)[-1]
    for p in patterns:
        if fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(base, p):
            return True
        if p.endswith("/**") and (rel == p[:-3] or fnmatch.fnmatchcase(rel, p[:-3])):
            return True
    return False


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _out_names(names: List[str]) -> Dict[str, str]:
    """File name -> output base name: known script extensions dropped unless that causes a clash."""
    stems: Dict[str, List[str]] = {}
    for n in names:
        low = n.lower()
        stem = n
        for ext in SCRIPT_EXTENSIONS:
            if low.endswith(ext) and len(n) > len(ext):
                stem = n[: -len(ext)]
                break
        stems.setdefault(stem, []).append(n)
    out = {}
    for stem, group in stems.items():
        for n in group:
            out[n] = stem if len(group) == 1 else n
    return out


def discover(src: str, *, out_dir: Optional[str] = None, include: Sequence[str] = (),
             exclude: Sequence[str] = (), max_size: int = DEFAULT_MAX_SIZE) -> Iterator[Found]:
    """Yield candidates and skipped files under `src` (a directory), in sorted path order."""
    root = os.path.realpath(src)
    out_real = os.path.realpath(out_dir) if out_dir else None
    yield from _walk(src, "", root, out_real, include, exclude, max_size, (root,))


def _walk(dir_path: str, rel_dir: str, root: str, out_real: Optional[str], include, exclude,
          max_size: int, ancestors: Tuple[str, ...]) -> Iterator[Found]:
    try:
        with os.scandir(dir_path) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        yield SkippedFile(rel_dir or ".", "M602", "error", f"cannot list folder: {exc.strerror or exc}")
        return
    files: List[Tuple[str, os.DirEntry, os.stat_result]] = []
    subdirs: List[Tuple[str, str, str]] = []
    # Output names come from every file name of the folder (not only the files this run selects),
    # so --include/--exclude never change what a script's outputs are called.
    all_names: List[str] = []
    for entry in entries:
        try:
            if not entry.is_dir():
                all_names.append(entry.name)
        except OSError:
            all_names.append(entry.name)
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        try:
            is_link = entry.is_symlink()
        except OSError:
            is_link = False
        try:
            st = os.stat(entry.path)              # follows symlinks
        except OSError as exc:
            if is_link:
                why = "symlink loop" if getattr(exc, "errno", None) == 40 else "broken symlink"
                yield SkippedFile(rel, "M604", "warning", f"{why}: {_readlink(entry.path)}")
            else:
                yield SkippedFile(rel, "M602", "error", f"cannot read: {exc.strerror or exc}")
            continue
        if stat.S_ISDIR(st.st_mode):
            if entry.name in VCS_DIRS:
                continue
            real = os.path.realpath(entry.path)
            if out_real is not None and _within(real, out_real):
                continue                           # the output folder inside the source tree
            if exclude and _matches(rel, exclude):
                continue
            if is_link:
                if real in ancestors:
                    yield SkippedFile(rel, "M604", "warning", f"symlink loop: {_readlink(entry.path)} points to a parent folder")
                    continue
                if _within(real, root):
                    yield SkippedFile(rel, "M605", "info",
                                      f"symlink to {os.path.relpath(real, root)}, which is converted there")
                    continue
            subdirs.append((entry.path, rel, real))
        elif stat.S_ISREG(st.st_mode):
            if exclude and _matches(rel, exclude):
                continue
            if include and not _matches(rel, include):
                continue
            if is_link:
                real = os.path.realpath(entry.path)
                if _within(real, root):
                    yield SkippedFile(rel, "M605", "info",
                                      f"symlink to {os.path.relpath(real, root)}, which is converted there")
                    continue
            if st.st_size > max_size:
                yield SkippedFile(rel, "M601", "warning",
                                  f"{st.st_size} bytes, over the {max_size}-byte limit (--max-size); not read")
                continue
            files.append((rel, entry, st))
        # sockets, fifos, devices: never read
    names = _out_names(all_names)
    for rel, entry, _st in files:
        stem = f"{rel_dir}/{names[entry.name]}" if rel_dir else names[entry.name]
        yield Candidate(rel, entry.path, stem)
    for path, rel, real in subdirs:
        yield from _walk(path, rel, root, out_real, include, exclude, max_size, ancestors + (real,))


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"
