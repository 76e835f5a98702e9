"""A disk-backed list of script records, so reports over huge repositories keep memory flat.

Records are appended as JSON lines in any order; iteration yields full `ScriptReport`s sorted by
path (via an in-memory index of offsets). `light()` gives the records without their heavy parts
(side-by-side rows and YAML) for summaries and indexes.
"""
from __future__ import annotations

import json
import os
import tempfile
from typing import Dict, Iterator, List, Optional, Tuple

from translator.report.model import ScriptReport


class ScriptSpool:
    def __init__(self, directory: Optional[str] = None) -> None:
        fd, self.path = tempfile.mkstemp(prefix="slurm2kf-spool-", suffix=".jsonl", dir=directory)
        self._fh = os.fdopen(fd, "w+b")
        self._index: Dict[str, Tuple[int, int]] = {}    # path -> (offset, length); later adds replace
        self._light: Dict[str, ScriptReport] = {}

    def add(self, record: dict) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        self._fh.seek(0, os.SEEK_END)
        off = self._fh.tell()
        self._fh.write(line)
        path = record["path"]
        self._index[path] = (off, len(line))
        light = dict(record)
        light["rows"] = ()
        light["yaml"] = ""
        self._light[path] = ScriptReport.from_json(light)

    def __len__(self) -> int:
        return len(self._index)

    def paths(self) -> List[str]:
        return sorted(self._index)

    def light(self) -> List[ScriptReport]:
        return [self._light[p] for p in self.paths()]

    def __iter__(self) -> Iterator[ScriptReport]:
        self._fh.flush()
        for p in self.paths():
            off, n = self._index[p]
            self._fh.seek(off)
            yield ScriptReport.from_json(json.loads(self._fh.read(n)))

    def close(self) -> None:
        try:
            self._fh.close()
        finally:
            try:
                os.unlink(self.path)
            except OSError:
                pass

    def __enter__(self) -> "ScriptSpool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
