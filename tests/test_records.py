"""translator/records.py: every record class behaves exactly like the frozen dataclass it replaces.

For each record, a twin is made with `dataclasses.make_dataclass(..., frozen=True)` from the same
fields and defaults (what `@dataclass(frozen=True)` generated before), and both are compared on
construction (positional, keyword, defaults, errors), repr, equality, hash, immutability, the
dataclasses helpers, pickling and the `__init__` signature.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pickle
import re
from pathlib import Path

import pytest

import translator
from translator.records import FrozenRecord, Record


# the modules that declare records (a test below checks that no other translator module does)
MODULES = (
    "translator.diagnostics",
    "translator.read.ast",
    "translator.slurm.job",
    "translator.slurm.options",
    "translator.slurm.getopt",
    "translator.slurm.values",
    "translator.slurm.resolve",
    "translator.read.header",
    "translator.read.source",
    "translator.read.body",
)


def _all_records():
    found = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Record)
                and value not in (Record, FrozenRecord)
                and value.__module__ == module_name
            ):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_record_modules_list_is_complete():
    root = Path(translator.__file__).parent
    declaring = {
        ".".join(("translator",) + p.relative_to(root).with_suffix("").parts)
        for p in root.rglob("*.py")
        if re.search(r"\((Frozen)?Record\):", p.read_text(encoding="utf-8"))
    }
    assert declaring - {"translator.records"} == set(MODULES)


RECORDS = _all_records()


def test_the_reader_and_resolver_records_are_covered():
    # the classes converted for start-up time (docs/benchmarks.md); more may follow
    for name in (
        "translator.read.header.TokenizedLine",
        "translator.read.ast.Word",
        "translator.read.ast.Command",
        "translator.read.ast.Script",
        "translator.diagnostics.Diagnostic",
        "translator.slurm.job.JobFields",
        "translator.slurm.options.OptionSpec",
        "translator.slurm.getopt.ParsedOption",
    ):
        assert name in RECORDS


def _twin(cls):
    specs = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            specs.append((f.name, f.type, dataclasses.field(default=f.default)))
        elif f.default_factory is not dataclasses.MISSING:
            specs.append((f.name, f.type, dataclasses.field(default_factory=f.default_factory)))
        else:
            specs.append((f.name, f.type))
    twin = dataclasses.make_dataclass(cls.__name__, specs, frozen=issubclass(cls, FrozenRecord))
    twin.__qualname__ = cls.__qualname__
    return twin


def _values(cls, tag):
    # distinct, hashable, picklable values; their types do not matter to the generated methods
    return [f"{tag}-{f.name}" for f in dataclasses.fields(cls)]


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_record_behaves_like_a_frozen_dataclass(name):
    cls = RECORDS[name]
    twin = _twin(cls)
    assert dataclasses.is_dataclass(cls)
    assert [f.name for f in dataclasses.fields(cls)] == [f.name for f in dataclasses.fields(twin)]
    assert cls.__match_args__ == twin.__match_args__

    # signature: same parameters, order and defaults
    ours = inspect.signature(cls)
    theirs = inspect.signature(twin)
    if list(ours.parameters) != ["args", "kwargs"]:  # a hand-written __init__
        assert [(p.name, p.kind) for p in ours.parameters.values()] == [
            (p.name, p.kind) for p in theirs.parameters.values()
        ]
        factory = {f.name for f in dataclasses.fields(cls) if f.default_factory is not dataclasses.MISSING}
        assert [p.default for p in ours.parameters.values() if p.name not in factory] == [
            p.default for p in theirs.parameters.values() if p.name not in factory
        ]

    values = _values(cls, "a")
    a, t = cls(*values), twin(*values)
    assert repr(a) == repr(t)
    if issubclass(cls, FrozenRecord):
        assert hash(a) == hash(t)
    else:
        assert cls.__hash__ is None and twin.__hash__ is None  # @dataclass with eq and not frozen
    names = [f.name for f in dataclasses.fields(cls)]
    assert cls(**dict(zip(names, values))) == a  # by keyword
    half = len(values) // 2
    assert cls(*values[:half], **dict(zip(names[half:], values[half:]))) == a
    assert a != cls(*_values(cls, "b"))
    assert a != t and (a == t) is False  # another class never compares equal
    assert a.__eq__(object()) is NotImplemented
    assert dataclasses.asdict(a) == dataclasses.asdict(t)
    assert dataclasses.astuple(a) == dataclasses.astuple(t)
    changed = dataclasses.replace(a, **{names[0]: "x"})
    assert getattr(changed, names[0]) == "x" and changed != a
    assert pickle.loads(pickle.dumps(a)) == a
    assert copy.deepcopy(a) == a and copy.copy(a) == a

    if not issubclass(cls, FrozenRecord):
        b = cls(*values)
        setattr(b, names[0], "changed")
        assert getattr(b, names[0]) == "changed" and b != a
    # frozen: the same error and message as the dataclass
    attempts = (
        lambda o: setattr(o, names[0], 1),
        lambda o: delattr(o, names[0]),
        lambda o: setattr(o, "not_a_field", 1),
    )
    for attempt in attempts if issubclass(cls, FrozenRecord) else ():
        with pytest.raises(dataclasses.FrozenInstanceError) as ours_err:
            attempt(a)
        with pytest.raises(dataclasses.FrozenInstanceError) as theirs_err:
            attempt(t)
        assert str(ours_err.value) == str(theirs_err.value)

    # defaults: only the required fields given (factories make a new value each time)
    required = [
        f
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    short = [f"c-{f.name}" for f in required]
    assert repr(cls(*short)) == repr(twin(*short))
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            assert getattr(cls(*short), f.name) is not getattr(cls(*short), f.name)

    # wrong calls fail as they would on the dataclass
    for args, kwargs in ((values + ["extra"], {}), (values, {names[0]: "dup"}), (values, {"no_such_field": 1})):
        with pytest.raises(TypeError):
            twin(*args, **kwargs)
        with pytest.raises(TypeError):
            cls(*args, **kwargs)
    if required:
        with pytest.raises(TypeError):
            cls(*short[:-1])
