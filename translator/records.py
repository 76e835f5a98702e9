"""Records: dataclasses whose methods are not generated when their module is imported.

`@dataclass(frozen=True)` writes and compiles five or six methods per class at import time
(`__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__`, `__delattr__`). For the ~20 records
that every `slurm2kf inspect` imports that was about a fifth of the command's start-up time (see
docs/benchmarks.md). A record is declared as

    @dataclass(init=False, repr=False, eq=False)
    class Word(FrozenRecord):
        raw: str
        ...

It stays a dataclass (`fields`, `replace`, `asdict` and `is_dataclass` work as before): the
decorator still collects the fields and sets the defaults, but generates no method. `FrozenRecord`
supplies the methods `@dataclass(frozen=True)` would have generated, with the same behaviour: an
`__init__` taking the fields in order (positionally or by keyword, defaults for the missing ones;
records built in hot loops define their own `__init__` with explicit parameters, which is as fast
as the generated one), the `Name(field=value, ...)` repr, equality with an instance of the same
class field by field, the hash of the field values, and `FrozenInstanceError` on assignment or
deletion. tests/test_records.py checks every record against a real frozen dataclass with the
same fields. `Record` is the same for a plain (mutable) `@dataclass`: fields can be assigned and
instances are unhashable, as with `@dataclass` (eq=True, not frozen).
"""

from __future__ import annotations

from dataclasses import MISSING, FrozenInstanceError, fields

_set = object.__setattr__  # how a frozen record's __init__ sets a field (as dataclasses does)

_NAMES: dict[type, tuple[str, ...]] = {}
_INIT: dict[type, tuple] = {}


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def _values(obj) -> tuple:
    return tuple([getattr(obj, name) for name in _names(obj.__class__)])


def _init_spec(cls: type) -> tuple:
    spec = _INIT.get(cls)
    if spec is None:
        spec = _INIT[cls] = tuple((f.name, f.default, f.default_factory) for f in fields(cls) if f.init)
    return spec


class Record:
    """Base of the mutable records (see the module docstring)."""

    __slots__ = ()

    def __init__(self, *args, **kwargs):
        spec = _init_spec(self.__class__)
        if len(args) > len(spec):
            raise TypeError(f"{self.__class__.__qualname__}() takes {len(spec)} arguments but {len(args)} were given")
        for (name, _, _), value in zip(spec, args):
            if name in kwargs:
                raise TypeError(f"{self.__class__.__qualname__}() got multiple values for argument {name!r}")
            _set(self, name, value)
        for name, default, factory in spec[len(args) :]:
            if name in kwargs:
                value = kwargs.pop(name)
            elif default is not MISSING:
                value = default
            elif factory is not MISSING:
                value = factory()
            else:
                raise TypeError(f"{self.__class__.__qualname__}() missing required argument: {name!r}")
            _set(self, name, value)
        if kwargs:  # what is left was not a field (a field given positionally too was refused above)
            raise TypeError(
                f"{self.__class__.__qualname__}() got an unexpected keyword argument {next(iter(kwargs))!r}"
            )

    def __repr__(self) -> str:
        body = ", ".join(f"{name}={getattr(self, name)!r}" for name in _names(self.__class__))
        return f"{self.__class__.__qualname__}({body})"

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return _values(self) == _values(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value: unhashable


class FrozenRecord(Record):
    """Base of the frozen records (see the module docstring)."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]  # Record is unhashable; frozen records hash by value
        return hash(_values(self))

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")
