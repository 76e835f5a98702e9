"""The value-kind table (translator.slurm.kinds): every option's value is parsed by the parser of its kind.

The option table (options.py) names a value kind per option; resolve.py looks the parser up by
that kind. These checks keep the two tables in step: a kind without a parser, a parser no option
uses, or an alias validated differently from the option it sets (sbatch's getopt gives an alias
the same `val`, so opt.c runs the same code for both).
"""

import pytest

from translator.slurm import kinds
from translator.slurm import values as V
from translator.slurm.options import CANONICAL, LONG_OPTIONS


def test_every_kind_of_the_option_table_has_a_parser():
    missing = sorted({o.value for o in LONG_OPTIONS.values()} - set(kinds.PARSERS))
    assert missing == []


def test_every_parser_is_used_by_an_option():
    unused = sorted(set(kinds.PARSERS) - {o.value for o in LONG_OPTIONS.values()})
    assert unused == []


def test_aliases_parse_like_the_option_they_set():
    for o in LONG_OPTIONS.values():
        if o.canonical:
            assert o.value == CANONICAL[o.canonical].value, o.name


def _parse(name, value):
    notes = []
    spec = LONG_OPTIONS[name]
    return kinds.parse(spec.value, value, spec.key, notes.append), notes


def test_core_and_thread_spec_share_one_field_but_read_back_differently():
    # Slurm keeps both in job_desc.core_spec (uint16) with bit 15 (CORE_SPEC_THREAD, 0x8000) marking
    # threads: a --core-spec with that bit set reads back as unset, --thread-spec without the bit
    # (the same values as the oracle probes core_spec_thread_bit / thread_spec_thread_bit).
    assert _parse("core-spec", "32768")[0] == ("unset", 32768)
    assert _parse("core-spec", "0")[0] == ("0", 0)  # zero reserved cores is a valid count
    assert _parse("thread-spec", "32768")[0] == ("0", 32768)


def test_begin_and_deadline_name_the_option_in_the_error():
    with pytest.raises(V.InvalidValue, match=r"Invalid --deadline specification"):
        _parse("deadline", "not a time")
    with pytest.raises(V.InvalidValue, match=r"Invalid --begin specification"):
        _parse("begin", "not a time")


def test_ignored_power_value_is_noted_not_refused():
    (text, parsed), notes = _parse("power", "bogus")
    assert notes == ["--power=bogus: sbatch ignores an unrecognized power option"]
