"""Finding job scripts in a source tree.

Discovery walks the tree (sorted, so every run sees the same order), prunes VCS folders, the output
folder and `--exclude` globs, follows symlinks safely, and hands candidate files to the workers,
which decide by content (`is_job_script`) whether a file is a Slurm job script: a `#!` first line and
an `#SBATCH`/`#SLURM` line in the header, never the file extension.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from collections.abc import Iterator, Sequence

from translator.fsio import has_escaped_bytes
from translator.report.model import SkippedFile

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", "CVS"})
DEFAULT_MAX_SIZE = 1 << 20  # 1 MiB: far above any job script
# Extensions dropped from output names when no sibling shares the stem.
SCRIPT_EXTENSIONS = (".sbatch", ".slurm", ".sh", ".bash", ".job", ".batch", ".sub", ".submit")

# A directive-looking line in the header (`# SBATCH` too: the converter then says sbatch ignores it).
_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(?:SBATCH|SLURM)\b", re.M)
# The first line that is neither blank nor a comment (the end of the header).
_COMMAND_LINE = re.compile(rb"^[ \t]*[^#\s\r\n][^\n]*$", re.M)


@dataclass(frozen=True)
class Candidate:
    rel: str  # relative path in the source tree, '/' separated (may hold surrogate escapes)
    path: str  # path to open
    out_stem: str  # output base name relative to OUT ('/' separated), without .trainjob.*
    name_note: str = ""  # why the output name differs from the usual one (M617), "" when it does not
    no_follow: bool = False  # open without following a link (the file was not a link when found)
    key: tuple[int, int] | None = None  # a link: (st_dev, st_ino) of the file it led to when found


Found = Candidate | SkippedFile


def is_job_script(data: bytes) -> bool:
    """`#!` first line and a directive line in the header (before the first command line)."""
    if not data.startswith(b"#!"):
        return False
    head = data[:65536]
    end = len(head)
    # The header ends at the first line that is neither blank nor a comment.
    m = _COMMAND_LINE.search(head)
    if m is not None:
        end = m.start()
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


def _stem(n: str) -> str:
    low = n.lower()
    for ext in SCRIPT_EXTENSIONS:
        if low.endswith(ext) and len(n) > len(ext):
            return n[: -len(ext)]
    return n


def _out_names(names: list[str]) -> dict[str, str]:
    """File name -> output base name: a known script extension is dropped unless another file of the
    folder has the same stem, or is itself named like that stem (`train.sh.sbatch` next to `train.sh`);
    then the full name is kept. The results are distinct because file names are."""
    stems: dict[str, list[str]] = {}
    for n in names:
        stems.setdefault(_stem(n), []).append(n)
    full = set(names)
    out = {}
    for stem, group in stems.items():
        for n in group:
            out[n] = stem if len(group) == 1 and (stem == n or stem not in full) else n
    return out


NAME_MAX_BYTES = 255


def _hash8(name: str) -> str:
    return hashlib.sha1(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def safe_component(name: str, room: int = 0) -> str:
    """A file or folder name as it can be written in OUT and named in a UTF-8 kustomization: bytes that
    are not UTF-8 (surrogate escapes) become `%XX`, and a name too long for the file system (with
    `room` bytes for a suffix) is cut and gets a hash of the full name. Other characters (newlines,
    controls) stay: the kustomization quotes them (files.yaml_quote)."""
    if has_escaped_bytes(name):
        safe = "".join(f"%{ord(ch) - 0xDC00:02X}" if "\udc80" <= ch <= "\udcff" else ch for ch in name)
    else:
        safe = name
    limit = NAME_MAX_BYTES - room
    if len(safe.encode("utf-8")) > limit:
        tag = "~" + _hash8(name)
        cut = safe.encode("utf-8")[: limit - len(tag)].decode("utf-8", "ignore")
        safe = cut + tag
    return safe


def _reserved(out_rel_dir: str) -> set:
    from translator.migrate.files import KUSTOMIZATION, LOCK_NAME, MANIFEST_NAME, report_names

    names = {KUSTOMIZATION}
    if not out_rel_dir:
        names |= set(report_names()) | {MANIFEST_NAME, LOCK_NAME}
    return names


def _folder_plan(file_names: list[str], dir_names: list[str], out_rel_dir: str):
    """Output stems for the folder's files and output names for its subfolders, all distinct from each
    other, from the outputs' suffixes and from the names migrate reserves (kustomization.yaml; at the
    top the reports and the manifest). Returns ({file: (stem, note)}, {folder: (name, note)})."""
    from translator.migrate.files import output_suffixes

    suffixes = output_suffixes()
    room = max((len(s.encode("utf-8")) for s in suffixes), default=0)
    natural = _out_names(file_names)
    taken = set(_reserved(out_rel_dir))
    files: dict[str, tuple[str, str]] = {}
    for n in sorted(file_names):
        stem = safe_component(natural[n], room)
        note = ""
        if stem != natural[n]:
            note = (
                f"its name holds bytes that are not UTF-8 (a kustomization cannot name them) or is too long; "
                f"outputs written as {stem}.trainjob.*"
            )
        if any(stem + s in taken for s in suffixes):
            stem = safe_component(natural[n] + "~" + _hash8(n), room)
            note = f"its output name is taken by another file of the folder; outputs written as {stem}.trainjob.*"
        taken.update(stem + s for s in suffixes)
        files[n] = (stem, note)
    dirs: dict[str, tuple[str, str]] = {}
    for d in sorted(dir_names):
        name = safe_component(d)
        note = ""
        if name != d:
            note = f"folder name holds bytes that are not UTF-8 or is too long; written as {name} in OUT"
        if name in taken:
            name = safe_component(d + "~" + _hash8(d))
            note = f"folder name is taken by a file migrate writes; written as {name} in OUT"
        taken.add(name)
        dirs[d] = (name, note)
    return files, dirs


PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
# File system types of the kernel's pseudo file systems: never entered wherever they are mounted.
_PSEUDO_TYPES = frozenset(
    "proc sysfs devtmpfs devpts cgroup cgroup2 debugfs tracefs securityfs bpf configfs mqueue pstore "
    "fusectl binfmt_misc efivarfs autofs hugetlbfs rpc_pipefs nsfs selinuxfs".split()
)
MAX_LINK_HOPS = 40  # as the kernel (ELOOP after 40 links in one path)


def _pseudo_devices() -> frozenset:
    """st_dev of the kernel's pseudo file systems: the ones mounted at /proc, /sys and /dev, and every
    mount of a pseudo file system type anywhere (/sys/fs/cgroup, /dev/pts, a `proc` mounted into a tree),
    from /proc/self/mountinfo. Never walked, read or followed. Only by type: a disk that also holds a
    file bind-mounted below /dev (Kubernetes' /dev/termination-log) is not pseudo, and neither is the
    root file system when /proc, /sys or /dev is a plain folder of it (nothing mounted there); links into
    /proc, /sys and /dev are refused by their path anyway (resolve_link)."""
    devs = set()
    try:
        root_dev = os.stat("/").st_dev
    except OSError:
        root_dev = None
    for p in PSEUDO_ROOTS:
        dev = _device(p)
        if dev is not None and dev != root_dev:
            devs.add(dev)
    try:
        with open("/proc/self/mountinfo", "rb") as fh:
            lines = fh.read(4 << 20).decode("utf-8", "replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split(" ")
        try:
            major, minor = (int(x) for x in fields[2].split(":"))
            fstype = fields[fields.index("-") + 1]
        except (IndexError, ValueError):
            continue
        if fstype in _PSEUDO_TYPES:
            devs.add(os.makedev(major, minor))
    devs.discard(root_dev)
    return frozenset(devs)


def _device(path: str) -> int | None:
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


def _in_pseudo_root(path: str) -> bool:
    return any(path == r or path.startswith(r + "/") for r in PSEUDO_ROOTS)


def resolve_link(path: str, pseudo: frozenset, root: str = "") -> tuple[str, str]:
    """Where a path really leads, resolved one part at a time as the kernel does: (real path, "") or
    ("", the first place it passes through that is in a kernel pseudo file system). Every part on the
    way is checked, not only the end: `/proc/self/root` ends at `/`, and `/proc/<pid>/cwd` in another
    process's folder, but both pass through /proc. ("", "") when the path cannot be resolved (broken,
    a loop of more than MAX_LINK_HOPS links). The source folder `root` and the folders above it are
    never counted as pseudo by their path (a tree the user keeps in /dev/shm is converted)."""
    if not path.startswith("/"):
        path = os.path.join(os.getcwd(), path)
    parts = [p for p in reversed(path.split("/")) if p]  # a stack: the next part is last
    resolved = "/"
    hops = 0
    while parts:
        part = parts.pop()
        if part == ".":
            continue
        if part == "..":
            resolved = os.path.dirname(resolved)  # `resolved` holds no link: its parent is real
            continue
        here = resolved.rstrip("/") + "/" + part
        ours = bool(root) and (_within(root, here) or _within(here, root))  # SRC, inside it or above it
        if _in_pseudo_root(here) and not ours:
            return "", here
        try:
            st = os.lstat(here)
        except OSError:
            return "", ""
        if st.st_dev in pseudo and not ours:
            return "", here
        if not stat.S_ISLNK(st.st_mode):
            resolved = here
            continue
        hops += 1
        if hops > MAX_LINK_HOPS:
            return "", ""
        try:
            target = os.readlink(here)
        except OSError:
            return "", ""
        if target.startswith("/"):
            resolved = "/"
        parts.extend(p for p in reversed(target.split("/")) if p)
    return resolved, ""


def _pseudo_skip(rel: str, entry_path: str, through: str, is_link: bool) -> SkippedFile:
    from translator.fsio import display_name

    if is_link:
        why = f"symbolic link to {_readlink(entry_path)}, which passes through {display_name(through)}"
        return SkippedFile(rel, "M619", "warning", f"{why} (/proc, /sys, /dev are never entered); not followed")
    why = "a mount of a kernel pseudo file system (like /proc, /sys, /dev)"
    return SkippedFile(rel, "M619", "warning", f"{why}; never entered")


def discover(
    src: str,
    *,
    out_dir: str | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    max_size: int = DEFAULT_MAX_SIZE,
    follow_symlinks: bool = False,
) -> Iterator[Found]:
    """Yield candidates and skipped files under `src` (a directory), in sorted path order.

    Symbolic links that lead out of `src` are reported (M619) and not followed unless
    `follow_symlinks`; then every folder and file is visited once (by device and inode), loops are
    cut (a link to a folder on the way down, or to a folder holding one: `..`, `/`). The kernel's
    pseudo file systems (/proc, /sys, /dev, wherever mounted) are never entered, read or passed
    through, in either mode (resolve_link checks every part of a link's way).
    """
    root = os.path.realpath(src)
    out_real = os.path.realpath(out_dir) if out_dir else None
    try:
        st = os.stat(root)
        seen = {(st.st_dev, st.st_ino): ""}
    except OSError:
        seen = {}
    walk = _Walk(root, out_real, include, exclude, max_size, follow_symlinks, seen)
    from translator.fsio import display_name

    # Paths in records and reports are shown text: bytes that are not UTF-8 and control characters
    # become `\\xNN` escapes (Candidate.path keeps the real name for opening the file).
    for item in walk.walk(src, "", "", (root,)):
        if isinstance(item, Candidate):
            shown = display_name(item.rel)
            if shown != item.rel:
                item = dataclasses.replace(item, rel=shown)
        else:
            shown = display_name(item.path)
            if shown != item.path:
                item = dataclasses.replace(item, path=shown)
        yield item


class _Walk:
    def __init__(self, root, out_real, include, exclude, max_size, follow, seen) -> None:
        self.root, self.out_real, self.include, self.exclude = root, out_real, include, exclude
        self.max_size, self.follow, self.seen = max_size, follow, seen
        # (the file system SRC itself is on is the user's choice: a tree kept in /dev/shm is converted)
        self.pseudo = _pseudo_devices() - {_device(root)}

    def _outside(self, rel: str, entry_path: str, real: str) -> SkippedFile | None:
        """A link leading out of SRC: the record that says it is not followed (None when following)."""
        if self.follow:
            return None
        return SkippedFile(
            rel,
            "M619",
            "info",
            f"symbolic link to {_readlink(entry_path)}, outside the source "
            "folder; not followed (--follow-symlinks to convert it)",
        )

    def walk(self, dir_path: str, rel_dir: str, out_rel_dir: str, ancestors: tuple[str, ...]) -> Iterator[Found]:
        try:
            with os.scandir(dir_path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield SkippedFile(rel_dir or ".", "M602", "error", f"cannot list folder: {exc.strerror or exc}")
            return
        files: list[tuple[str, os.DirEntry, os.stat_result]] = []
        subdirs: list[tuple[str, str, str, str]] = []
        # Output names come from every file name of the folder (not only the files this run selects),
        # so --include/--exclude never change what a script's outputs are called.
        all_names: list[str] = []
        for entry in entries:
            try:
                if not entry.is_dir():
                    all_names.append(entry.name)
            except OSError:
                all_names.append(entry.name)
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            for item in self._entry(entry, rel, ancestors):
                if isinstance(item, SkippedFile):
                    yield item
                elif len(item) == 3:
                    files.append(item)
                else:
                    subdirs.append(item)
        names, dir_names = _folder_plan(all_names, [s[3] for s in subdirs], out_rel_dir)
        for rel, entry, st in files:
            stem, note = names[entry.name]
            link = _is_link(entry)
            out_stem = f"{out_rel_dir}/{stem}" if out_rel_dir else stem
            yield Candidate(rel, entry.path, out_stem, note, not link, (st.st_dev, st.st_ino) if link else None)
        for path, rel, real, name in subdirs:
            out_name, note = dir_names[name]
            if note:
                yield SkippedFile(rel, "M617", "info", note)
            sub_out = f"{out_rel_dir}/{out_name}" if out_rel_dir else out_name
            yield from self.walk(path, rel, sub_out, ancestors + (real,))

    def _entry(self, entry: os.DirEntry, rel: str, ancestors: tuple[str, ...]) -> Iterator:
        """What one folder entry gives: SkippedFile records, a file (rel, entry, stat) or a folder to walk
        (path, rel, real path, name)."""
        try:
            is_link = entry.is_symlink()
        except OSError:
            is_link = False
        try:
            st = os.stat(entry.path)  # follows symlinks
        except OSError as exc:
            if is_link:
                why = "symlink loop" if getattr(exc, "errno", None) == 40 else "broken symlink"
                yield SkippedFile(rel, "M604", "warning", f"{why}: {_readlink(entry.path)}")
            else:
                yield SkippedFile(rel, "M602", "error", f"cannot read: {exc.strerror or exc}")
            return
        real = ""
        if is_link:
            real, through = resolve_link(entry.path, self.pseudo, self.root)
            if through:
                yield _pseudo_skip(rel, entry.path, through, True)
                return
            if not real:
                yield SkippedFile(rel, "M604", "warning", f"symlink loop: {_readlink(entry.path)}")
                return
        if st.st_dev in self.pseudo:  # a pseudo file system mounted in the tree (not through a link)
            yield _pseudo_skip(rel, entry.path, entry.path, False)
            return
        if stat.S_ISDIR(st.st_mode):
            yield from self._folder(entry, rel, st, real or os.path.realpath(entry.path), is_link, ancestors)
        elif stat.S_ISREG(st.st_mode):
            yield from self._file(entry, rel, st, real, is_link)
        else:
            # sockets, FIFOs, devices: never opened
            if (self.exclude and _matches(rel, self.exclude)) or (self.include and not _matches(rel, self.include)):
                return
            from translator.fsio import kind_of_mode

            yield SkippedFile(
                rel,
                "M621",
                "info",
                f"{kind_of_mode(st.st_mode)}"
                + (f" (through a symbolic link to {_readlink(entry.path)})" if is_link else "")
                + "; special files are never read",
            )

    def _folder(self, entry, rel: str, st, real: str, is_link: bool, ancestors: tuple[str, ...]) -> Iterator:
        if entry.name in VCS_DIRS:
            return
        if self.out_real is not None and _within(real, self.out_real):
            return  # the output folder inside the source tree
        if self.exclude and _matches(rel, self.exclude):
            return
        if is_link:
            # A link to a folder on the way down, or (when following) to a folder that holds one (`../..`,
            # `/`): a loop, never entered.
            if real in ancestors or (self.follow and any(_within(a, real) for a in ancestors)):
                yield SkippedFile(
                    rel,
                    "M604",
                    "warning",
                    f"symlink loop: {_readlink(entry.path)} points to a parent folder (or one that contains it)",
                )
                return
            skipped = self._link_target(rel, entry.path, real)
            if skipped is not None:
                yield skipped
                return
        key = (st.st_dev, st.st_ino)
        if key in self.seen:
            yield SkippedFile(
                rel, "M605", "info", f"the same folder as {self.seen[key] or '.'}, which is converted there"
            )
            return
        self.seen[key] = rel
        yield (entry.path, rel, real, entry.name)

    def _link_target(self, rel: str, path: str, real: str):
        """Why a link is not followed (M605: its target is converted where it is in the tree; or what
        `_outside` says of a target out of the tree), or None."""
        if _within(real, self.root):
            return SkippedFile(
                rel, "M605", "info", f"symlink to {os.path.relpath(real, self.root)}, which is converted there"
            )
        return self._outside(rel, path, real)

    def _file(self, entry, rel: str, st, real: str, is_link: bool) -> Iterator:
        if self.exclude and _matches(rel, self.exclude):
            return
        if self.include and not _matches(rel, self.include):
            return
        if is_link:
            skipped = self._link_target(rel, entry.path, real)
            if skipped is not None:
                yield skipped
                return
        if is_link or self.follow:  # following links: each real file once (hard links, two ways to one folder)
            key = (st.st_dev, st.st_ino)
            if key in self.seen:
                yield SkippedFile(rel, "M605", "info", f"the same file as {self.seen[key]}, which is converted there")
                return
            self.seen[key] = rel
        if st.st_size > self.max_size:
            yield SkippedFile(
                rel,
                "M601",
                "warning",
                f"{st.st_size} bytes, over the {self.max_size}-byte limit (--max-size); not read",
            )
            return
        yield (rel, entry, st)


def _is_link(entry: os.DirEntry) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _readlink(path: str) -> str:
    from translator.fsio import display_name

    try:
        return display_name(os.readlink(path))
    except OSError:
        return "?"
