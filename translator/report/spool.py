"""A disk-backed list of script records, so reports over huge repositories keep memory flat.

Records arrive in any order (from migrate workers), each as its JSON text plus pre-rendered report
fragments (the HTML section, the Markdown section): rendering happens in the workers, in parallel,
and the parent only concatenates. Iteration yields full `ScriptReport`s sorted by path (through an
in-memory index of offsets); `light()` gives the records without rows and YAML, for summaries.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator

from translator.report.model import ScriptReport

RECORD = "json"


class ScriptSpool:
    def __init__(self, directory: str | None = None) -> None:
        fd, self.path = tempfile.mkstemp(prefix="slurm2kf-spool-", suffix=".bin", dir=directory)
        self._fh = os.fdopen(fd, "w+b")
        self._index: dict[str, dict[str, tuple[int, int]]] = {}  # path -> kind -> (offset, length)
        self._light: dict[str, ScriptReport] = {}
        self._end = 0

    def _put(self, text: str) -> tuple[int, int]:
        data = text.encode("utf-8")
        self._fh.seek(self._end)
        self._fh.write(data)
        off = self._end
        self._end += len(data)
        return off, len(data)

    def add(self, record: dict) -> None:
        """Add a record given as a ScriptReport JSON dict (fragments rendered later, if asked)."""
        light = {k: v for k, v in record.items() if k not in ("rows", "yaml")}
        self.add_rendered(record["path"], json.dumps(record, ensure_ascii=False, separators=(",", ":")), light, {})

    def add_rendered(self, path: str, record_json: str, light: dict, fragments: dict[str, str]) -> None:
        """Add a record as its JSON text, its light dict and pre-rendered fragments by kind. A later
        add for the same path replaces the earlier one."""
        entry = {RECORD: self._put(record_json)}
        for kind, text in fragments.items():
            entry[kind] = self._put(text)
        self._index[path] = entry
        self._light[path] = ScriptReport.from_json(light)

    def __len__(self) -> int:
        return len(self._index)

    def paths(self) -> list[str]:
        return sorted(self._index)

    def light(self) -> list[ScriptReport]:
        return [self._light[p] for p in self.paths()]

    def _read(self, off_len: tuple[int, int]) -> str:
        off, n = off_len
        self._fh.seek(off)
        return self._fh.read(n).decode("utf-8")

    def raw(self, kind: str, paths: list[str] | None = None) -> Iterator[tuple[str, str]]:
        """(path, text of that kind) in path order, or for the given paths in that order. Every script must
        hold a fragment of that kind (``has(kind)``, as ``model.prerendered`` checks)."""
        self._fh.flush()
        for p in self.paths() if paths is None else paths:
            yield p, self._read(self._index[p][kind])

    def has(self, kind: str) -> bool:
        return bool(self._index) and all(kind in e for e in self._index.values())

    def __iter__(self) -> Iterator[ScriptReport]:
        self._fh.flush()
        for p in self.paths():
            yield self.get(p)

    def get(self, path: str) -> ScriptReport:
        return ScriptReport.from_json(json.loads(self._read(self._index[path][RECORD])))

    def close(self) -> None:
        try:
            self._fh.close()
        finally:
            try:
                os.unlink(self.path)
            except OSError:
                pass

    def __enter__(self) -> ScriptSpool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
