"""YAML documents as Kubernetes reads them, with the line of every field.

Decoding follows what ``kubectl`` does with a manifest (sigs.k8s.io/yaml): duplicate mapping keys
are an error (PyYAML would silently keep the last one), timestamps stay strings, other scalars
follow YAML 1.1 (``on`` -> true, unquoted ``8`` -> 8).  Each document keeps a map from JSON path
(tuple of keys/indexes) to the 1-based line where that field is written, built from the composed
node marks, so a problem can name the line of the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Path = tuple[Any, ...]
_MAX_NODES = 200_000


class DecodeError(Exception):
    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass
class Document:
    index: int  # 0-based position in the file
    data: Any
    lines: dict[Path, int] = field(default_factory=dict)
    start_line: int | None = None
    problems: list[tuple[str, Path, int, str]] = field(default_factory=list)  # (code, path, line, msg)
    node_count: int = 0

    def line_of(self, path: Path) -> int | None:
        """The line of ``path``, or of its nearest written parent."""
        path = tuple(path)
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return self.start_line
            path = path[:-1]


def _scalar(node, constructor):
    tag = node.tag
    if tag == "tag:yaml.org,2002:timestamp":
        return node.value  # Kubernetes keeps dates as strings
    if tag in ("tag:yaml.org,2002:binary", "tag:yaml.org,2002:value", "tag:yaml.org,2002:merge"):
        return node.value
    return constructor.construct_object(node, deep=True)


def _convert(node, path: Path, doc: Document, constructor, depth: int = 0):
    import yaml

    if depth > 200:
        raise DecodeError("document nested too deeply", node.start_mark.line + 1)
    doc.node_count += 1
    if doc.node_count > _MAX_NODES:  # alias bombs ("billion laughs") expand without bound
        raise DecodeError(f"document has more than {_MAX_NODES} values (alias expansion?)", node.start_mark.line + 1)
    doc.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise DecodeError("mapping key is not a scalar", key_node.start_mark.line + 1)
            key = _scalar(key_node, constructor)
            if not isinstance(key, str):
                key = str(key) if not isinstance(key, bool) else ("true" if key else "false")
            child = path + (key,)
            line = key_node.start_mark.line + 1
            if key in out:
                doc.problems.append(
                    (
                        "V713",
                        child,
                        line,
                        f"duplicate key {key!r} (first at line {doc.lines.get(child)}); kubectl rejects the document",
                    )
                )
            doc.lines[child] = line
            out[key] = _convert(value_node, child, doc, constructor, depth + 1)
            doc.lines[child] = line
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, path + (i,), doc, constructor, depth + 1) for i, item in enumerate(node.value)]
    return _scalar(node, constructor)


def load_documents(text: str) -> list[Document]:
    """All documents of ``text`` (empty documents skipped); raises DecodeError on YAML syntax errors."""
    import yaml

    constructor = yaml.constructor.SafeConstructor()
    docs: list[Document] = []
    try:
        for node in yaml.compose_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if node is None:
                continue
            doc = Document(index=len(docs), data=None, start_line=node.start_mark.line + 1)
            doc.data = _convert(node, (), doc, constructor)
            docs.append(doc)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise DecodeError(f"not valid YAML: {exc.problem or exc}", line) from None
    except yaml.YAMLError as exc:
        raise DecodeError(f"not valid YAML: {exc}") from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise DecodeError(f"cannot decode value: {exc}") from None
    return docs


def json_path(path: Path) -> str:
    """``spec.trainer.env[0].name`` (keys with dots or brackets are quoted)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part and all(ch.isalnum() or ch in "_-" for ch in part):
            out += ("." if out else "") + part
        else:
            out += f"[{part!r}]"
    return out or "<document>"
