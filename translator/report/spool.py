"""A disk-backed list of script records, so reports over huge repositories keep memory flat.

Records arrive in any order (from migrate workers). A worker appends each record's JSON text to a
file of its own (`RecordWriter`, in the spool's folder) and sends back only where it is (file,
offset, length) with the light record (no rows, no YAML) for summaries: the large text never crosses
the pipe and the parent never re-encodes it. Records can also be added here as text, with
pre-rendered report fragments by kind. Iteration yields full `ScriptReport`s sorted by path (through
an in-memory index of offsets); `light()` gives the records without rows and YAML.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator

from translator.report.model import ScriptReport

RECORD = "json"
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


class ScriptSpool:
    def __init__(self, directory: str | None = None) -> None:
        # A private folder: the spool's own file, and one file per process that writes records into it.
        self.folder = tempfile.mkdtemp(prefix="slurm2kf-spool-", dir=directory)
        fd, self.path = tempfile.mkstemp(prefix="parent-", suffix=".bin", dir=self.folder)
        self._fh = os.fdopen(fd, "w+b")
        # path -> kind -> (file, offset, length); file None = the spool's own file, else a writer's file name
        self._index: dict[str, dict[str, tuple[str | None, int, int]]] = {}
        self._light: dict[str, ScriptReport] = {}
        self._end = 0
        self._others: dict[str, int] = {}  # writer file name -> open descriptor (read side)

    def _put(self, text: str) -> tuple[str | None, int, int]:
        data = text.encode("utf-8")
        self._fh.seek(self._end)
        self._fh.write(data)
        off = self._end
        self._end += len(data)
        return None, off, len(data)

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

    def add_text(self, path: str, record: bytes, light: ScriptReport) -> None:
        """Add a record as its JSON text (UTF-8) with its light record; replaces an earlier one."""
        self._fh.seek(self._end)
        self._fh.write(record)
        self._index[path] = {RECORD: (None, self._end, len(record))}
        self._end += len(record)
        self._light[path] = light

    def add_written(self, path: str, where: tuple[str, int, int], light: ScriptReport) -> None:
        """Add a record a RecordWriter of this spool's folder wrote (`where` is what its put returned),
        with its light record. A later add for the same path replaces the earlier one."""
        name = where[0]
        if not name or os.sep in name or name in (".", ".."):
            raise ValueError(f"not a record file of this spool: {name!r}")
        self._index[path] = {RECORD: where}
        self._light[path] = light

    def flush(self) -> None:
        """Write what the spool's own file buffers (before a fork: a child must not inherit it)."""
        self._fh.flush()

    def __len__(self) -> int:
        return len(self._index)

    def paths(self) -> list[str]:
        return sorted(self._index)

    def light(self) -> list[ScriptReport]:
        return [self._light[p] for p in self.paths()]

    def _read(self, where: tuple[str | None, int, int]) -> str:
        # positioned reads only (never seek): a process forked to write a report reads the same open
        # files as the parent at the same time (migrate's report writers), and shares their offsets
        name, off, n = where
        return self._pread(name, off, n).decode("utf-8")

    def raw(self, kind: str, paths: list[str] | None = None) -> Iterator[tuple[str, str]]:
        """(path, text of that kind) in path order, or for the given paths in that order. Every script must
        hold a fragment of that kind (``has(kind)``, as ``model.prerendered`` checks)."""
        self._fh.flush()
        for p in self.paths() if paths is None else paths:
            yield p, self._read(self._index[p][kind])

    def raw_bytes(self, kind: str) -> Iterator[bytes | memoryview]:
        """The texts of that kind in path order, as the UTF-8 bytes stored (what `raw` decodes), for a
        writer that copies them as they are. Records that lie end to end in one file (a batch's records
        sit in path order in its worker's file) are read together, in reads of up to READ_AT bytes."""
        self._fh.flush()
        run_name: str | None = None
        run_start = run_end = 0
        lengths: list[int] = []
        for p in self.paths():
            name, off, n = self._index[p][kind]
            if lengths and name == run_name and off == run_end and run_end - run_start + n <= self.READ_AT:
                lengths.append(n)
                run_end += n
                continue
            if lengths:
                yield from self._pieces(run_name, run_start, lengths)
            run_name, run_start, run_end, lengths = name, off, off + n, [n]
        if lengths:
            yield from self._pieces(run_name, run_start, lengths)

    READ_AT = 1 << 20

    def _pieces(self, name: str | None, start: int, lengths: list[int]) -> Iterator[memoryview]:
        data = memoryview(self._pread(name, start, sum(lengths)))
        at = 0
        for n in lengths:
            yield data[at : at + n]
            at += n

    def _pread(self, name: str | None, off: int, n: int) -> bytes:
        if name is None:
            fd = self._fh.fileno()
        elif (known := self._others.get(name)) is not None:
            fd = known
        else:
            fd = self._others[name] = os.open(
                os.path.join(self.folder, name), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
            )
        data = os.pread(fd, n, off)
        if len(data) != n:  # the file is the spool's: written before the worker answered
            raise OSError(f"record file {name or os.path.basename(self.path)} is shorter than expected")
        return data

    def has(self, kind: str) -> bool:
        return bool(self._index) and all(kind in e for e in self._index.values())

    def __iter__(self) -> Iterator[ScriptReport]:
        self._fh.flush()
        for p in self.paths():
            yield self.get(p)

    def get(self, path: str) -> ScriptReport:
        self._fh.flush()
        return ScriptReport.from_json(json.loads(self._read(self._index[path][RECORD])))

    def close(self) -> None:
        try:
            self._fh.close()
            for fd in self._others.values():
                os.close(fd)
            self._others.clear()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> ScriptSpool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RecordWriter:
    """The writing side for one process: record texts appended to a new file in a spool's folder.

    `put` buffers; `flush` writes the buffer (call it before handing out what `put` returned: a
    record is read back only after its process has flushed). Nothing is shared between processes:
    each has its own file (created with O_EXCL, never through a link)."""

    FLUSH_AT = 1 << 20

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.pid = os.getpid()
        n = 0
        while True:
            self.name = f"w{self.pid}-{n}.bin"
            try:
                self.fd = os.open(os.path.join(folder, self.name), _WRITE_FLAGS, 0o600)
                break
            except FileExistsError:
                n += 1
        self.end = 0  # offset where the next record goes
        self._parts: list[bytes] = []
        self._pending = 0

    def put(self, data: bytes) -> tuple[str, int, int]:
        where = (self.name, self.end, len(data))
        self.end += len(data)
        self._parts.append(data)
        self._pending += len(data)
        if self._pending >= self.FLUSH_AT:
            self.flush()
        return where

    def flush(self) -> None:
        if not self._parts:
            return
        view = memoryview(b"".join(self._parts))
        self._parts.clear()
        self._pending = 0
        while view:
            view = view[os.write(self.fd, view) :]

    def close(self) -> None:
        try:
            self.flush()
        finally:
            os.close(self.fd)
