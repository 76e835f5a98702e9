"""Writing outputs safely inside OUT: atomic replace, compare-before-write, the manifest, kustomizations.

Every path inside OUT is relative, normalised and checked (`out_parts`): no `..`, no empty or `.`
parts, no NUL. It is reached from OUT's own descriptor one folder at a time with `O_NOFOLLOW`, so a
symbolic link inside OUT (a folder or a file) never redirects a read, a write or a delete to another
place: such an entry is refused (`OutEntryRefused`, M618). Only regular files are read, and only up to
a size cap, so an OUT entry that is a FIFO or `/dev/zero` neither hangs nor fills memory.

Every file goes through a temporary file in the same directory and a rename, so a reader (or a run
killed half-way) only ever sees the old file or the new one. Files whose content would not change are
not touched (mtime kept), which makes re-running idempotent.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from typing import IO, cast
from collections.abc import Callable, Iterable

from translator.yaml_text import yaml_quote
from translator.fsio import TMP_TAG, UserFileError, json_loads, kind_of_mode, read_user_file, write_atomic

MANIFEST_NAME = ".slurm2kf-migrate.json"
LOCK_NAME = ".slurm2kf-migrate.lock"  # held (flock) by the run writing into OUT
MANIFEST_FORMAT = "slurm2kf-migrate"
KUSTOMIZATION = "kustomization.yaml"
REPORT_BASENAME = "slurm2kf-report"
WRITTEN = "written"
UNCHANGED = "unchanged"
MANIFEST_MAX_BYTES = 256 << 20  # the manifest of a 100,000-script tree is ~30 MB
COMPARE_MAX_BYTES = 1 << 30  # an existing output larger than this is "different" (rewritten)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class OutEntryRefused(OSError):
    """A path inside OUT that migrate will not read, write or delete (M618): a symbolic link or special
    file in the way, or a path that is not a clean relative path."""

    def __init__(self, rel: str, message: str) -> None:
        super().__init__(message)
        self.rel = rel
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # (pickled whole when it crosses from a pool worker)
        return (OutEntryRefused, (self.rel, self.message))


def out_parts(rel: str) -> list[str]:
    """The parts of a relative OUT path, or OutEntryRefused when it is not relative and normalised."""
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\0" in rel:
        raise OutEntryRefused(str(rel), f"{rel!r} is not a relative path inside the output folder")
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise OutEntryRefused(rel, f"{rel!r} is not a normalised relative path inside the output folder")
    return parts


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Dir:
    """An open folder inside OUT (context manager)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> int:
        return self.fd

    def __exit__(self, *exc) -> None:
        os.close(self.fd)


def _open_root(root: str) -> int:
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))


def open_out_dir(root: str, parts: list[str], create: bool, rel: str = "") -> _Dir | None:
    """Descend from OUT through `parts` (folders), never following a symlink. None when a folder is
    missing and `create` is false; OutEntryRefused when an entry in the way is not a real folder."""
    try:
        fd = _open_root(root)
    except FileNotFoundError:
        if create:
            raise
        return None
    try:
        for i, p in enumerate(parts):
            try:
                nfd = os.open(p, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                try:
                    os.mkdir(p, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                nfd = os.open(p, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):  # O_NOFOLLOW met a link / not a folder
                    raise
                where = "/".join(parts[: i + 1])
                try:
                    what = kind_of_mode(os.stat(p, dir_fd=fd, follow_symlinks=False).st_mode)
                except OSError:
                    what = "not a folder"
                raise OutEntryRefused(
                    rel or where,
                    f"{where} in the output folder is {what}, not a folder; migrate does not follow or replace it",
                ) from None
            os.close(fd)
            fd = nfd
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        raise
    return _Dir(fd)


def _entry_mode(dfd: int, name: str) -> int | None:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None


def _check_regular(dfd: int, name: str, rel: str) -> bool:
    """True when `name` exists as a regular file, False when absent; OutEntryRefused otherwise."""
    mode = _entry_mode(dfd, name)
    if mode is None:
        return False
    if not stat.S_ISREG(mode):
        raise OutEntryRefused(
            rel,
            f"{rel} in the output folder is {kind_of_mode(mode)}, not a regular file; "
            "migrate does not read, follow or replace it",
        )
    return True


def _read_existing(dfd: int, name: str, rel: str, limit: int) -> bytes | None:
    """The content of an existing regular OUT file (None when absent or over `limit`)."""
    if not _check_regular(dfd, name, rel):
        return None
    try:
        return read_user_file(name, limit, follow_symlinks=False, dir_fd=dfd)
    except UserFileError as exc:
        if exc.kind == "too_large":
            return None
        if exc.kind == "missing":
            return None
        raise OutEntryRefused(rel, f"{rel} in the output folder: {exc.message}") from None


def _digest_existing(dfd: int, name: str, rel: str) -> str | None:
    """sha256 of an existing regular OUT file, read in 1 MiB pieces (a report of hundreds of MB is never held
    whole in memory); None when absent or larger than COMPARE_MAX_BYTES."""
    if not _check_regular(dfd, name, rel):
        return None
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OutEntryRefused(rel, f"{rel} in the output folder: cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OutEntryRefused(rel, f"{rel} in the output folder is {kind_of_mode(st.st_mode)}, not a regular file")
        if st.st_size > COMPARE_MAX_BYTES:
            return None
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


def out_read(root: str, rel: str, limit: int) -> bytes | None:
    """Read a regular file inside OUT (None when absent or larger than `limit`)."""
    parts = out_parts(rel)
    d = open_out_dir(root, parts[:-1], create=False, rel=rel)
    if d is None:
        return None
    with d as dfd:
        return _read_existing(dfd, parts[-1], rel, limit)


def out_sha256(root: str, rel: str) -> str | None:
    """sha256 of a regular file inside OUT; None when absent or not comparable."""
    parts = out_parts(rel)
    d = open_out_dir(root, parts[:-1], create=False, rel=rel)
    if d is None:
        return None
    with d as dfd:
        return _digest_existing(dfd, parts[-1], rel)


def out_write(root: str, rel: str, data: bytes, check: bool = False) -> str:
    """Write `data` to OUT/rel atomically unless the file already holds it. Returns WRITTEN/UNCHANGED.

    In check mode nothing is written; the return value says whether it would be. Raises
    OutEntryRefused when a symlink or special file is in the way.
    """
    parts = out_parts(rel)
    d = open_out_dir(root, parts[:-1], create=not check, rel=rel)
    if d is None:  # check mode, folder missing
        return WRITTEN
    with d as dfd:
        old = _read_existing(dfd, parts[-1], rel, len(data))
        if old == data:
            return UNCHANGED
        if check:
            return WRITTEN
        write_atomic(dfd, parts[-1], data)
    return WRITTEN


def _holds(dfd: int, name: str, rel: str, data: bytes) -> bool:
    """Whether the OUT file `name` (in the folder open as `dfd`) already holds exactly `data`: as
    `_read_existing(...) == data`, with one stat (the file's own check) instead of two."""
    if not _check_regular(dfd, name, rel):
        return False
    try:
        old = read_user_file(name, len(data), follow_symlinks=False, dir_fd=dfd, checked=True)
    except UserFileError as exc:
        if exc.kind in ("too_large", "missing"):
            return False
        raise OutEntryRefused(rel, f"{rel} in the output folder: {exc.message}") from None
    return old == data


def out_write_many(root: str, items: list[tuple[str, bytes]], check: bool = False) -> list[str | OSError]:
    """out_write for each (rel, data), in order: its status (WRITTEN/UNCHANGED), or the OSError
    (OutEntryRefused...) that out_write would raise for it. Outputs of one folder (a script's outputs)
    share one descent from OUT; when that descent fails, each output is written on its own by
    out_write, so every output gets exactly the answer out_write gives."""
    results: list[str | OSError] = []
    i, n = 0, len(items)
    while i < n:
        rel = items[i][0]
        folder = rel.rpartition("/")[0]
        j = i + 1
        while j < n and items[j][0].rpartition("/")[0] == folder:
            j += 1
        group = items[i:j]
        i = j
        try:
            parts = out_parts(rel)
            d = open_out_dir(root, parts[:-1], create=not check, rel=rel)
        except OSError:
            d = None
            parts = []
        if not parts:  # the general path, one output at a time
            for rel_i, data in group:
                try:
                    results.append(out_write(root, rel_i, data, check))
                except OSError as exc:
                    results.append(exc)
            continue
        if d is None:  # check mode, folder missing
            results.extend(WRITTEN for _ in group)
            continue
        with d as dfd:
            for rel_i, data in group:
                try:
                    name = out_parts(rel_i)[-1]
                    if _holds(dfd, name, rel_i, data):
                        results.append(UNCHANGED)
                    elif check:
                        results.append(WRITTEN)
                    else:
                        write_atomic(dfd, name, data)
                        results.append(WRITTEN)
                except OSError as exc:
                    results.append(exc)
    return results


class _HashingText:
    """A text sink that hashes (and optionally forwards encoded bytes); `write_bytes` takes content that
    is already UTF-8. Text (and small encoded pieces) is gathered and encoded, hashed and forwarded in
    pieces of about FLUSH_AT characters (few large writes instead of one per call); `flush` sends the
    rest. Encoding the joined text gives the same bytes as encoding each part: the UTF-8 codec never
    pairs surrogates across parts, each lone one is escaped the same way."""

    FLUSH_AT = 1 << 18

    def __init__(self, put: Callable[[bytes | memoryview], None] | None = None) -> None:
        self.h = hashlib.sha256()
        self.put = put
        self._parts: list[str] = []
        self._size = 0
        self._raw: list[bytes | memoryview] = []  # encoded pieces waiting (write_bytes); never both kinds
        self._raw_size = 0

    def write(self, s: str) -> int:
        if self._raw:
            self._flush_raw()
        self._parts.append(s)
        self._size += len(s)
        if self._size >= self.FLUSH_AT:
            self._flush_text()
        return len(s)

    def write_bytes(self, b: bytes | memoryview) -> None:
        """Content already encoded (UTF-8), after the text written so far: hashed and forwarded with no
        decoding and re-encoding (the JSON report copies the spooled records this way). Small pieces are
        gathered as text is, a large one goes as it is."""
        if self._parts:
            self._flush_text()
        n = len(b)
        if n >= self.FLUSH_AT:
            self._flush_raw()
            self._send(b)
            return
        self._raw.append(b)
        self._raw_size += n
        if self._raw_size >= self.FLUSH_AT:
            self._flush_raw()

    def flush(self) -> None:
        self._flush_raw()
        self._flush_text()

    def _flush_text(self) -> None:
        if self._parts:
            b = "".join(self._parts).encode("utf-8", "backslashreplace")  # reports are always valid UTF-8
            self._parts.clear()
            self._size = 0
            self._send(b)

    def _flush_raw(self) -> None:
        if self._raw:
            b = b"".join(self._raw)
            self._raw.clear()
            self._raw_size = 0
            self._send(b)

    def _send(self, b: bytes | memoryview) -> None:
        self.h.update(b)
        if self.put is not None:
            self.put(b)


def out_write_stream(root: str, rel: str, produce: Callable[[IO[str]], None], check: bool = False) -> tuple[str, str]:
    """Stream a large text file (reports) through `produce(out)`; same contract as out_write.

    Returns (WRITTEN|UNCHANGED, sha256 of the content).
    """
    parts = out_parts(rel)
    if check:
        sink = _HashingText()
        produce(cast(IO[str], sink))  # write-only: the report writers only call write()
        sink.flush()
        digest = sink.h.hexdigest()
        return (UNCHANGED if out_sha256(root, rel) == digest else WRITTEN), digest
    d = open_out_dir(root, parts[:-1], create=True, rel=rel)
    assert d is not None  # create=True: made, or refused with OutEntryRefused
    with d as dfd:
        _check_regular(dfd, parts[-1], rel)
        holder = {}

        def content(put):
            sink = _HashingText(put)
            produce(cast(IO[str], sink))
            sink.flush()
            holder["digest"] = sink.h.hexdigest()

        # Write a new temporary file, then keep the old file when the content did not change.
        from translator.fsio import tmp_name

        tmp = tmp_name(parts[-1])
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o644, dir_fd=dfd)
        try:
            try:

                def put(b: bytes | memoryview) -> None:
                    view = memoryview(b)
                    while view:
                        view = view[os.write(fd, view) :]

                content(put)
            finally:
                os.close(fd)
            digest = holder["digest"]
            if _digest_existing(dfd, parts[-1], rel) == digest:
                os.unlink(tmp, dir_fd=dfd)
                return UNCHANGED, digest
            os.replace(tmp, parts[-1], src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
    return WRITTEN, digest


def out_remove(root: str, rel: str, digest: str) -> str:
    """Remove OUT/rel when it is a regular file holding exactly the content with `digest`, then the
    folders it leaves empty. Returns "removed", "absent" or "edited" (kept). Never follows a link."""
    parts = out_parts(rel)
    d = open_out_dir(root, parts[:-1], create=False, rel=rel)
    if d is None:
        return "absent"
    with d as dfd:
        found = _digest_existing(dfd, parts[-1], rel)
        if found is None:
            return "absent" if _entry_mode(dfd, parts[-1]) is None else "edited"
        if found != digest:
            return "edited"
        os.unlink(parts[-1], dir_fd=dfd)
    # prune the folders left empty, deepest first (rmdir never removes a link or a non-empty folder)
    for i in range(len(parts) - 1, 0, -1):
        d = open_out_dir(root, parts[: i - 1], create=False, rel=rel)
        if d is None:
            return "removed"
        with d as dfd:
            try:
                os.rmdir(parts[i - 1], dir_fd=dfd)
            except OSError:
                return "removed"
    return "removed"


def sweep_temp_files(root: str) -> int:
    """Remove temporary files a killed run left behind (never following links). Returns how many."""
    n = 0
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            if f.endswith(TMP_TAG) and f.startswith("."):
                p = os.path.join(dirpath, f)
                try:
                    if stat.S_ISREG(os.lstat(p).st_mode):
                        os.unlink(p)
                        n += 1
                except OSError:
                    pass
    return n


def report_names() -> tuple[str, ...]:
    """The reports migrate writes at the top of OUT, one per report format (translator.report)."""
    from translator.report import REPORT_WRITERS

    return tuple(f"{REPORT_BASENAME}.{w.extension}" for w in REPORT_WRITERS.values())


def output_suffixes() -> tuple[str, ...]:
    """The suffixes of migrate's per-script outputs, one per output format (translator.emit)."""
    from translator.emit import migrate_writers

    return tuple(w.suffix for w in migrate_writers())


def is_output_name(rel: str) -> bool:
    """A name migrate itself writes: only such files are ever removed as stale outputs."""
    base = rel.rsplit("/", 1)[-1]
    if base == KUSTOMIZATION or rel in report_names():
        return True
    return any(len(base) > len(suffix) and base.endswith(suffix) for suffix in output_suffixes())


# ---- the lock ----------------------------------------------------------------------------------


class OutBusy(Exception):
    """Another process holds the lock on OUT (another `migrate` is writing into it)."""


def lock_out(root: str, exclusive: bool = True) -> int | None:
    """Lock OUT for this run: an exclusive `flock` on OUT/LOCK_NAME (created when missing), or a shared
    one (`exclusive` false: a `--check` run, which takes it only when the file exists and never creates
    it). Returns the descriptor to pass to unlock_out when the run ends (the kernel also releases the
    lock when the process dies); None when there is nothing to lock. The file is reached without
    following a link and must be a regular file (OutEntryRefused otherwise); OutBusy when another
    process holds the lock. A lock won on a file that another run removed meanwhile is taken again on
    the current one, so two runs can never both hold "the" lock."""
    import fcntl

    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    if exclusive:
        flags |= os.O_CREAT
    d = open_out_dir(root, [], create=False, rel=LOCK_NAME)
    if d is None:
        return None
    with d as dfd:
        for _attempt in range(20):
            try:
                fd = os.open(LOCK_NAME, flags, 0o644, dir_fd=dfd)
            except FileNotFoundError:
                return None
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.ENODEV, errno.EISDIR):
                    raise
                mode = _entry_mode(dfd, LOCK_NAME) or 0
                raise OutEntryRefused(
                    LOCK_NAME, f"{LOCK_NAME} in the output folder is {kind_of_mode(mode)}, not a regular file"
                ) from None
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise OutEntryRefused(
                        LOCK_NAME,
                        f"{LOCK_NAME} in the output folder is {kind_of_mode(st.st_mode)}, not a regular file",
                    )
                try:
                    fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise OutBusy() from None
                now = os.stat(LOCK_NAME, dir_fd=dfd, follow_symlinks=False)
                if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                    return fd
            except FileNotFoundError:
                pass  # removed by the run that held it: try again on a new file
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
    raise OutBusy()


def unlock_out(root: str, fd: int, remove: bool) -> None:
    """Release the lock of lock_out; with `remove`, first remove the lock file (while still holding it,
    and only when it is still the file locked), so a finished run leaves nothing behind in OUT."""
    try:
        if remove:
            d = open_out_dir(root, [], create=False, rel=LOCK_NAME)
            if d is not None:
                with d as dfd:
                    st, now = os.fstat(fd), os.stat(LOCK_NAME, dir_fd=dfd, follow_symlinks=False)
                    if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                        os.unlink(LOCK_NAME, dir_fd=dfd)
    except OSError:
        pass  # left behind: the next run takes the lock on it and removes it
    finally:
        os.close(fd)


# ---- manifest ---------------------------------------------------------------------------------


def read_manifest(out_dir: str) -> dict | None:
    """The manifest of a previous run, {} when unreadable but present, None when absent."""
    try:
        mode = os.lstat(os.path.join(out_dir, MANIFEST_NAME)).st_mode
    except OSError:
        return None
    if not stat.S_ISREG(mode):
        return {}
    try:
        raw = out_read(out_dir, MANIFEST_NAME, MANIFEST_MAX_BYTES)
        if raw is None:
            return {}
        data = json_loads(raw)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        return {}
    return data


def manifest_bytes(outputs: dict[str, str], scripts: dict[str, list[str]], renamed: list[str], version: str) -> bytes:
    data = {
        "format": MANIFEST_FORMAT,
        "tool": "slurm2kf",
        "version": version,
        "outputs": dict(sorted(outputs.items())),
        "scripts": dict(sorted(scripts.items())),
        "renamed": sorted(renamed),
    }
    # ASCII with \\u escapes: file names that are not UTF-8 (surrogate escapes) survive the round trip
    return (json.dumps(data, indent=1, ensure_ascii=True) + "\n").encode("ascii")


# ---- kustomization ----------------------------------------------------------------------------


def kustomizations(yaml_outputs: Iterable[str]) -> dict[str, list[str]]:
    """Folder ('' = root) -> sorted resources: its TrainJob YAML files, then subfolders that have any.

    The root folder always gets one, so `kubectl apply -k OUT` works whatever the tree holds.
    """
    files: dict[str, list[str]] = {"": []}
    subdirs: dict[str, set] = {"": set()}
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
    out: dict[str, list[str]] = {}
    for d in files:
        out[d] = sorted(files[d]) + sorted(subdirs.get(d, ()))
    return out


def kustomization_bytes(resources: list[str]) -> bytes:
    lines = [
        "# Generated by slurm2kf migrate: the TrainJobs of this folder and its subfolders.",
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
    ]
    if resources:
        lines.append("resources:")
        lines.extend(f"- {yaml_quote(r)}" for r in resources)
    else:
        lines.append("resources: []")
    # keep each file's order: a batch-mode file holds the TrainingRuntime before the TrainJob that refers to it,
    # and kustomize's default order would apply the TrainJob first (kustomize >= 5.0, kubectl >= 1.27)
    lines += ["sortOptions:", "  order: fifo"]
    return ("\n".join(lines) + "\n").encode("utf-8")
