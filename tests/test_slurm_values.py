"""Value grammars of sbatch 22.05 options (translator.slurm.values).

Expectations come from the sbatch semantics notes (shared docs, sections 6, 7, 9, 11) and from
what real sbatch 22.05.8 did with the same values (slurm-oracle runs noted per case).
"""

import pytest

from translator.slurm import values as V


@pytest.mark.parametrize(
    "text,seconds",
    [
        ("90", 90 * 60),  # M
        ("2:30", 3 * 60),  # M:S, 2m30s rounded UP (doc table: 3 minutes)
        ("1:30:00", 5400),  # H:M:S
        ("1:2:3", 63 * 60),  # 1h 2m 3s -> 63 min (oracle: 01:03:00)
        ("00:00:10", 60),  # oracle: 00:01:00
        ("0:30", 60),  # oracle: 00:01:00
        ("1-12", 36 * 3600),  # D-H
        ("5-1:2", (5 * 24 * 60 + 62) * 60),  # D-H:M (oracle: 5-01:02:00)
        ("2-00:00:00", 172800),  # D-H:M:S
        ("1-", 86400),  # oracle: 1-00:00:00
        ("0", 0),
        ("-1", 0),
        ("INFINITE", 0),
        ("unlimited", 0),  # no limit
    ],
)
def test_time_forms(text, seconds):
    assert V.parse_time(text) == seconds


@pytest.mark.parametrize(
    "text",
    [
        "1:2:3:4",
        "abc",
        "1:-2",
        " 10",
        "10.5",
        "",
        "1-2-3",
        "1::0",
        ":30",
        "1:",
        "12:",
        "1-:30",
        "1-2:",
        "::",
        "-",
        "1--",
        "-5-3",
    ],
)
def test_time_invalid(text):
    with pytest.raises(V.InvalidValue, match=r"Invalid --time specification"):
        V.parse_time(text)


def test_time_message_names_the_option():
    with pytest.raises(V.InvalidValue, match=r"--time-min"):
        V.parse_time("x", "time-min")


def test_format_time_like_sbatch():
    assert V.format_time(5400) == "01:30:00"
    assert V.format_time(172800) == "2-00:00:00"
    assert V.format_time(0) == "UNLIMITED"


@pytest.mark.parametrize(
    "text,mib",
    [
        ("4000", 4000),
        ("32G", 32768),
        ("32g", 32768),
        ("100MB", 100),
        ("2gb", 2048),
        ("1T", 1048576),
        ("1024K", 1),
        ("1025K", 2),
        ("0", 0),
        ("+10", 10),
        (" 10G", 10240),
    ],
)
def test_memory(text, mib):
    assert V.parse_mem(text) == mib


@pytest.mark.parametrize("text", ["1.5G", "-5", "10GiB", "1P", "100B", "G", ""])
def test_memory_invalid(text):
    with pytest.raises(V.InvalidValue, match=r"Invalid --mem specification"):
        V.parse_mem(text)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("2", (2, 2)),
        ("2-4", (2, 4)),
        ("1k", (1024, 1024)),
        ("2k-4k", (2048, 4096)),
        ("0", (0, 0)),
        ("-3", (1, 3)),
    ],
)
def test_nodes(text, expected):
    assert V.parse_nodes(text) == expected


@pytest.mark.parametrize(
    "text,message",
    [
        ("2-1", "Maximum node count 1 is less than minimum node count 2"),
        ("1,2,4", '"1,2,4" is not a valid node count'),  # no size lists in 22.05
        ("1-4:2", '"4:2" is not a valid node count'),
        ("abc", '"abc" is not a valid node count'),
        ("2-", "Maximum node count -1 is less than minimum node count 2"),
    ],
)
def test_nodes_invalid(text, message):
    with pytest.raises(V.InvalidValue) as exc:
        V.parse_nodes(text)
    assert str(exc.value) == message


@pytest.mark.parametrize("text", ["0", "-1", "2x", "2.5", "1k", ""])
def test_counts_must_be_positive_integers(text):
    with pytest.raises(V.InvalidValue, match=r'Invalid numeric value ".*" for --ntasks\.'):
        V.parse_count(text, "ntasks")


def test_count_zero_allowed_for_core_spec():
    assert V.parse_count("0", "core-spec", allow_zero=True) == 0


def test_gres_forms():
    assert V.parse_gres("gpu:4") == (V.GresItem("gpu", None, 4),)
    assert V.parse_gres("gpu:a100:2") == (V.GresItem("gpu", "a100", 2),)
    assert V.parse_gres("gpu:a100") == (V.GresItem("gpu", "a100", 1),)  # type, count 1
    assert V.parse_gres("gpu") == (V.GresItem("gpu", None, 1),)
    assert V.parse_gres("gpu:2k") == (V.GresItem("gpu", None, 2048),)  # count suffix
    assert V.parse_gres("gpu:a100:1,nvme:100") == (V.GresItem("gpu", "a100", 1), V.GresItem("nvme", None, 100))
    assert V.parse_gres("none") == ()


@pytest.mark.parametrize(
    "text,message",
    [
        ("gres/gpu:2", "Invalid generic resource (gres) specification"),  # 22.05 refuses the prefix
        ("gpu:a100:x", "Invalid generic resource (gres) specification"),
        ("gpu:a100:2,gpu:1", "Invalid GRES specification (with and without type identification)"),
    ],
)
def test_gres_invalid(text, message):
    with pytest.raises(V.InvalidValue) as exc:
        V.parse_gres(text)
    assert str(exc.value) == message


def test_gpus_forms():
    assert V.gpu_count_and_type(V.parse_gpus("8")) == (8, None)
    assert V.gpu_count_and_type(V.parse_gpus("a100:2")) == (2, "a100")
    assert V.gpu_count_and_type(V.parse_gpus("a100")) == (1, "a100")  # oracle: per_job 1, type a100
    # several types: Slurm reports the first one (oracle: per_node 2, type a100)
    assert V.gpu_count_and_type(V.parse_gpus("a100:2,v100:1")) == (2, "a100")
    with pytest.raises(V.InvalidValue):
        V.parse_gpus("x:y:2")
    with pytest.raises(V.InvalidValue):
        V.parse_gpus("2,a100:1")


def test_array_spec_and_throttle():
    assert V.split_array("0-15:4%2") == ("0-15:4", 2)
    assert V.split_array("1,3,5") == ("1,3,5", None)
    assert V.array_indexes("0-15:4") == ([0, 4, 8, 12], [])
    assert V.array_indexes("3,1,1-2") == ([1, 2, 3], [])
    assert V.array_indexes("[1-5]") == ([1, 2, 3, 4, 5], [])
    assert V.array_indexes("0-1000")[1] == []


@pytest.mark.parametrize("spec", ["0-1001", "1-10:0", "5-1", "abc"])
def test_array_problems_slurmctld_refuses(spec):
    # sbatch accepts these; slurmctld answers "Invalid job array specification" (oracle)
    assert V.array_indexes(spec)[1]


def test_dependency_problems():
    assert V.dependency_problems("afterok:123") == []
    assert V.dependency_problems("afterany:100:101,singleton") == []
    assert V.dependency_problems("afterok:1?afternotok:2") == []
    assert V.dependency_problems("after:5+10") == []
    assert V.dependency_problems("foo:1")  # oracle: Job dependency problem
    assert V.dependency_problems("afterok:$PREV")  # never expanded
    assert V.dependency_problems("afterok:1,afterany:2?afterok:3")  # mixed separators


@pytest.mark.parametrize(
    "text,flags,number,seconds",
    [
        ("USR1", "", 10, 60),
        ("B:USR1@120", "B", 10, 120),
        ("R:USR1@30", "R", 10, 30),
        ("SIGUSR2@100", "", 12, 100),
        ("usr1", "", 10, 60),
        ("10", "", 10, 60),
        ("RB:USR1", "RB", 10, 60),
        ("B:SIGUSR1@0", "B", 10, 0),
        ("70000", "", 70000 & 0xFFFF, 60),
    ],
)
def test_signal(text, flags, number, seconds):
    sig = V.parse_signal(text)
    assert (sig.flags, sig.number, sig.seconds) == (flags, number, seconds)


@pytest.mark.parametrize("text", ["BOGUS", "B:10@abc", "X:USR1", "0", "10@-1"])
def test_signal_invalid(text):
    with pytest.raises(V.InvalidValue, match="Invalid --signal specification"):
        V.parse_signal(text)


def test_signal_rendered_as_sbatch_merges_it():
    for text, shown in [
        ("SIGUSR2@100", "USR2@100"),
        ("usr1", "USR1"),
        ("B:SIGUSR1@0", "B:USR1@0"),
        ("70000", "4464"),
        ("RB:USR1", "RB:USR1"),
    ]:
        assert V.format_signal(V.parse_signal(text), text) == shown


def test_mail_type():
    assert V.parse_mail_type("END,FAIL") == ("END", "FAIL")
    assert V.parse_mail_type("fail,Begin") == ("FAIL", "BEGIN")
    assert set(V.parse_mail_type("ALL")) == {"INVALID_DEPEND", "BEGIN", "END", "FAIL", "REQUEUE", "STAGE_OUT"}
    assert V.parse_mail_type("NONE") == ()
    assert V.parse_mail_type("ALL,NONE") == () and V.parse_mail_type("NONE,bogus") == ()  # oracle
    with pytest.raises(V.InvalidValue, match="Invalid --mail-type specification"):
        V.parse_mail_type("bogus")


def test_exclusive_and_open_mode_and_small_enums():
    assert V.parse_exclusive(None) == "exclusive"
    assert V.parse_exclusive("") == "exclusive"
    assert V.parse_exclusive("user") == "user"
    assert V.parse_exclusive("mcs") == "mcs"
    with pytest.raises(V.InvalidValue):
        V.parse_exclusive("topo")  # 22.05 has no topo (oracle: refused)
    assert V.parse_open_mode("append") == "append"
    assert V.parse_open_mode("Apples") == "append"  # first letter decides (oracle)
    assert V.parse_open_mode("truncate") == "truncate"
    with pytest.raises(V.InvalidValue):
        V.parse_open_mode("foo")
    assert V.parse_yes_no("YES", "kill-on-invalid-dep") == "yes"
    assert V.parse_no_kill(None) is True
    assert V.parse_no_kill("off") is False
    with pytest.raises(V.InvalidValue):
        V.parse_no_kill("on")
    assert V.parse_nice(None) == 100 and V.parse_nice("-5") == -5 and V.parse_nice("abc") == 0
    with pytest.raises(V.InvalidValue):
        V.parse_wait_all_nodes("2")
    with pytest.raises(V.InvalidValue):
        V.parse_hint("foo")
    with pytest.raises(V.InvalidValue):
        V.parse_distribution("foo")
    assert V.parse_distribution("block:cyclic") == "block:cyclic"
    assert V.parse_distribution("plane=4") == "plane=4"
    assert V.parse_distribution("*:block") == "block:block"  # oracle: `*` is the default, block
    assert V.plane_size("plane=4") == 4 and V.plane_size("block") is None
    assert V.relative_seconds("now+2days") == 172800 and V.relative_seconds("now+90") == 5400
    assert V.relative_seconds("now") == 0  # no offset: the submit time itself (was a crash)
    assert V.relative_seconds("16:00") is None


def test_extra_node_info():
    assert V.parse_extra_node_info("2:4:1") == (2, 4, 1)
    assert V.parse_extra_node_info("2:*") == (2, None)
    with pytest.raises(V.InvalidValue, match='Invalid numeric value "x" for second arg of -B.'):
        V.parse_extra_node_info("2:x")


def test_less_common_options_rendered_as_sbatch_merges_them():
    # renderings observed in sbatch 22.05.8's merged option dump (slurm-oracle)
    assert V.parse_delay_boot("90") == "01:30:00" and V.parse_delay_boot("0") == "00:00:00"
    assert V.parse_profile("task,energy") == "Energy,Task"
    assert V.parse_profile("all") == "Energy,Lustre,Network,Task" and V.parse_profile("none") == "None"
    assert (
        V.parse_cpu_freq("high") == "High"
        and V.parse_cpu_freq("2400000-3000000:performance") == "2400000-3000000:Performance"
    )
    assert V.parse_power("level") == ("LEVEL", True) and V.parse_power("bogus") == ("unset", False)
    assert V.parse_switches("2@10:00") == "2@00:10:00" and V.parse_switches("3") == "3"
    for bad, fn in [
        ("bogus", V.parse_profile),
        ("bogus", V.parse_cpu_freq),
        ("bogus", V.parse_mem_bind),
        ("bogus", V.parse_gpu_bind),
        ("bogus", V.parse_acctg_freq),
        ("x", V.parse_switches),
        ("abc", V.parse_delay_boot),
    ]:
        with pytest.raises(V.InvalidValue):
            fn(bad)
    assert V.parse_gpu_bind("verbose,closest") == "verbose,closest"
    assert V.parse_mem_bind("local") == "local" and V.parse_acctg_freq("task=30") == "task=30"


@pytest.mark.parametrize(
    "text,ok",
    [
        ("now+1hour", True),
        ("now+2days", True),
        ("now", True),
        ("tomorrow", True),
        ("16:00", True),
        ("2026-01-31T08:00:00", True),
        ("2026-01-31", True),
        ("teatime", True),
        ("bogus", False),
        ("now+3parsecs", False),
    ],
)
def test_begin_grammar(text, ok):
    assert V.begin_is_valid(text) is ok


def test_negative_days_wrap_around_like_22_05():
    # oracle: --time=-5 is stored as 2982611-04:17:00, -2 as 2982614-04:17:00, -0 as UNLIMITED
    assert V.parse_time("-5") == 257697605820
    assert V.format_time(V.parse_time("-2")) == "2982614-04:17:00"
    assert V.parse_time("-0") == 0


def test_array_trailing_comma_and_bare_dependency():
    assert V.split_array("1-5,") == ("1-5", None)
    assert V.array_indexes("1-5,") == ([1, 2, 3, 4, 5], [])
    assert V.normalise_dependency("123") == "afterany:123"
    assert V.normalise_dependency("afterok:1,2") == "afterok:1,afterany:2"
    assert V.normalise_dependency("afterok:1?afternotok:2") == "afterok:1?afternotok:2"


def test_count_wraps_to_32_bits_like_sbatch():
    # fixture ntasks_overflow_wraps_rejected: 99999999999 is stored as 1215752191
    assert V.parse_count("99999999999", "ntasks") == 1215752191
    assert V.parse_count("08", "ntasks") == 8


def test_array_indexes_after_the_throttle():
    assert V.split_array("1-3:2%1,5") == ("1-3:2,5", 1)
    assert V.array_indexes("1-3:2,5")[0] == [1, 3, 5]


def test_signal_time_at_most_65535():
    assert V.parse_signal("B:USR1@65535").seconds == 65535
    with pytest.raises(V.InvalidValue):
        V.parse_signal("B:USR1@65536")


# ---- C integer semantics (derived from strtol/int casts; the oracle probes check them on Slurm) --


@pytest.mark.parametrize(
    "text,stored",
    [
        ("4294967295", -1),
        ("3000000000", -1294967296),
        ("4294967296", 0),
        ("4294967297", 1),
        ("2147483648", -2147483648),
        ("+4", 4),
        ("007", 7),
    ],
)
def test_count_is_stored_in_a_c_int(text, stored):
    assert V.parse_count(text, "ntasks", allow_zero=True) == stored


@pytest.mark.parametrize("text", ["9223372036854775807", "9223372036854775808", "18446744073709551616"])
def test_count_clamped_to_long_max_is_refused(text):
    with pytest.raises(V.InvalidValue, match=r"Numeric argument \(9223372036854775807\) to big for --ntasks"):
        V.parse_count(text, "ntasks")


@pytest.mark.parametrize(
    "text,expected",
    [
        ("4294967296", (0, 0)),
        ("4294967297", (1, 1)),
        ("3000000000-5", (1, 5)),
        ("2-4294967296", (2, 0)),
        ("4194304k", (0, 0)),
        ("4096m", (0, 0)),
    ],
)
def test_node_counts_are_cast_to_int(text, expected):
    assert V.parse_nodes(text) == expected


@pytest.mark.parametrize("text", ["4294967295", "3000000000", "2147483648", "2097152k", "2-3000000000"])
def test_node_counts_that_cast_negative_are_refused(text):
    with pytest.raises(V.InvalidValue):
        V.parse_nodes(text)


@pytest.mark.parametrize("digit", ["\u0663", "\u00b2", "\uff14", "\u09ea"])  # Arabic-Indic 3, ², fullwidth 4, Bengali 4
@pytest.mark.parametrize(
    "parse",
    [
        lambda v: V.parse_count(v, "ntasks"),
        V.parse_nodes,
        V.parse_mem,
        V.parse_time,
        V.parse_signal,
        V.parse_gpus,
        V.parse_gres,
        V.parse_delay_boot,
    ],
)
def test_non_ascii_digits_are_not_numbers(parse, digit):
    value = "1" + digit
    try:
        result = parse(value)
    except V.InvalidValue:
        return
    # GPU/GRES options read a word that is not a count as a type or GRES name (count 1), never as 13 etc.
    assert all(item.count == 1 and value in (item.type, item.name) for item in result), result


def test_non_ascii_case_and_space_are_not_folded():
    with pytest.raises(V.InvalidValue):
        V.parse_signal("S\u0131GINT")  # dotless i upper-cases to I in Python, not in C
    with pytest.raises(V.InvalidValue):
        V.parse_exclusive("u\u017fer")  # long s upper-cases to S
    with pytest.raises(V.InvalidValue):
        V.parse_count("\u00a04", "ntasks")  # no-break space is not C isspace
    with pytest.raises(V.InvalidValue):
        V.parse_mem("4\u212a")  # KELVIN SIGN lower-cases to k in Python
