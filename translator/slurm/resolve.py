"""Script -> SlurmJob: the options sbatch 22.05 would submit, merged as sbatch merges them.

Order of application (opt.c `process_options_second_pass`), a later step overriding an earlier:
`#SBATCH` directives (top to bottom, last occurrence wins, `--mail-type` accumulates), then the
`SBATCH_*` input environment, then command-line options; then the cross-option checks sbatch
makes before submitting. A hetjob is read once per component; options that Slurm does not reset
between components (job name, time, output, ...) carry over to the next component.

Every application is kept as an `OptionSetting` (source, line, as written) for the line-by-line
explanation. Diagnostics use codes O2xx (documented in docs/codes.md, section codes-O).
"""

from __future__ import annotations

import os
from operator import attrgetter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from collections.abc import Callable, Mapping, Sequence

from translator.diagnostics import ERROR, INFO, WARNING, Diagnostic
from translator.read.ast import Directive, Script
from translator.records import FrozenRecord
from translator.slurm import values as V
from translator.slurm.getopt import GetoptError, ParsedOption, getopt_long, match_long
from translator.slurm.job import JobComponent, JobFields, OptionSetting, SlurmJob
from translator.slurm.kinds import _NOTING_KINDS, parse as parse_kind
from translator.slurm.options import (
    ACCEPTED_PLUGINS,
    CANONICAL,
    ENV_ONLY,
    ENV_OPTIONS,
    LONG_OPTIONS,
    NONE,
    OPTIONAL,
    OptionSpec,
    shifter_value_problem,
)
from translator.tables import keep

if TYPE_CHECKING:
    from translator.slurm.foreign import Translation

# ---- diagnostic codes ------------------------------------------------------------------------
O201_UNKNOWN_OPTION = "O201"
O202_AMBIGUOUS_OPTION = "O202"
O203_MISSING_ARGUMENT = "O203"
O204_UNEXPECTED_ARGUMENT = "O204"
O205_STRAY_WORD = "O205"
O206_PLUGIN_OPTION = "O206"
O207_INVALID_VALUE = "O207"
O208_CONFLICT = "O208"
O209_CONTROLLER_REJECTS = "O209"
O210_ABBREVIATION = "O210"
O211_ALIAS = "O211"
O212_OVERRIDDEN = "O212"
O213_NOT_EXPANDED = "O213"
O214_UNKNOWN_ENV = "O214"
O215_SITE_GRES = "O215"
O216_DOUBLE_GPU_REQUEST = "O216"
O217_SHARED_SETTING = "O217"
O218_ENV_IGNORED = "O218"
O219_MISSING_REQUIREMENT = "O219"
O220_WRAPPER_TRANSLATED = "O220"
O221_WRAPPER_ERROR = "O221"
O222_WRAPPER_IGNORED = "O222"
O223_COMMAND_LINE_ONLY = "O223"
O224_VALUE_IGNORED = "O224"
O225_SUBMIT_HOST_DEPENDENT = "O225"
O226_SHIFTER_OPTION = "O226"
O227_SHIFTER_REFUSES = "O227"

CODES = {
    O201_UNKNOWN_OPTION: ERROR,
    O202_AMBIGUOUS_OPTION: ERROR,
    O203_MISSING_ARGUMENT: ERROR,
    O204_UNEXPECTED_ARGUMENT: ERROR,
    O205_STRAY_WORD: ERROR,
    O206_PLUGIN_OPTION: WARNING,
    O207_INVALID_VALUE: ERROR,
    O208_CONFLICT: ERROR,
    O209_CONTROLLER_REJECTS: WARNING,
    O210_ABBREVIATION: INFO,
    O211_ALIAS: INFO,
    O212_OVERRIDDEN: INFO,
    O213_NOT_EXPANDED: WARNING,
    O214_UNKNOWN_ENV: WARNING,
    O215_SITE_GRES: WARNING,
    O216_DOUBLE_GPU_REQUEST: WARNING,
    O217_SHARED_SETTING: INFO,
    O218_ENV_IGNORED: INFO,
    O219_MISSING_REQUIREMENT: ERROR,
    O220_WRAPPER_TRANSLATED: WARNING,
    O221_WRAPPER_ERROR: ERROR,
    O222_WRAPPER_IGNORED: INFO,
    O223_COMMAND_LINE_ONLY: WARNING,
    O224_VALUE_IGNORED: WARNING,
    O225_SUBMIT_HOST_DEPENDENT: WARNING,
    O226_SHIFTER_OPTION: INFO,
    O227_SHIFTER_REFUSES: ERROR,
}

_GETOPT_CODES = {
    "unknown": O201_UNKNOWN_OPTION,
    "ambiguous": O202_AMBIGUOUS_OPTION,
    "missing-argument": O203_MISSING_ARGUMENT,
    "unexpected-argument": O204_UNEXPECTED_ARGUMENT,
    "stray-word": O205_STRAY_WORD,
    "spank": O206_PLUGIN_OPTION,
}

# Options that share one field in Slurm: setting one changes what the other reports.
_SHARED = {
    "exclusive": "share",
    "oversubscribe": "share",
    "requeue": "requeue",
    "no-requeue": "requeue",
    "core-spec": "spec",
    "thread-spec": "spec",
}

DIRECTIVE, ENV, CLI = "directive", "env", "cli"

# Value kinds sbatch validates only after merging all options (after its option dump)
_CHECKED_AFTER_MERGE = ("gres", "gpus", "hint")


@dataclass(init=False, repr=False, eq=False)
class _Invalid(FrozenRecord):
    """A value sbatch refuses, kept as written."""

    raw: str | None


class _Value:
    """One merged option while a component is built (a plain class: it is made for every option)."""

    __slots__ = ("value", "parsed", "source", "line")

    def __init__(self, value: str | None, parsed: Any, source: str, line: int | None):
        self.value = value  # merged value string (None for flags given without value)
        self.parsed = parsed  # what the kind's parser returned (kinds.py): int, tuple, str, _Invalid, ...
        self.source = source
        self.line = line


class _Component:
    """The option state of one hetjob component while it is being built."""

    def __init__(self, index: int, carried: dict[str, _Value] | None = None):
        self.index = index
        self.state: dict[str, _Value] = dict(carried or {})
        self.order: dict[str, int] = {}
        self.settings: list[OptionSetting] = []
        self.spank: dict[str, tuple[str, str | None]] = {}
        self.dropped: set = set()  # merged, then discarded by sbatch's final checks
        self.history: dict[str, list[tuple[int | None, str | None]]] = {}  # #SBATCH settings
        self.tick = 0
        for k in self.state:
            self.order[k] = 0

    def set(self, name: str, val: _Value) -> None:
        self.tick += 1
        self.state[name] = val
        self.order[name] = self.tick

    def reset(self, name: str) -> None:
        self.state.pop(name, None)

    def by_cli(self, name: str) -> bool:
        v = self.state.get(name)
        return v is not None and v.source != ENV

    def by_env(self, name: str) -> bool:
        v = self.state.get(name)
        return v is not None and v.source == ENV


class _Resolver:
    def __init__(self) -> None:
        self.diags: list[Diagnostic] = []

    def diag(self, code: str, message: str, line: int | None, suggestion: str | None = None) -> None:
        self.diags.append(Diagnostic(CODES[code], code, message, line, suggestion))

    # ---- parsing one option value --------------------------------------------------------

    def parse_value(self, spec: OptionSpec, value: str | None):
        """Validate as sbatch does; returns (value string to record, parsed value). The parser is the
        one of the option's value kind (translator/slurm/kinds.py)."""
        return parse_kind(spec.value, value, spec.key, self._value_ignored)

    def _value_ignored(self, message: str) -> None:
        self.diag(O224_VALUE_IGNORED, message, None)

    # ---- applying ------------------------------------------------------------------------

    def apply(
        self,
        comp: _Component,
        spec: OptionSpec,
        value: str | None,
        source: str,
        line: int | None,
        written: str,
        reset_flag: bool = False,
    ) -> None:
        name = spec.key
        if reset_flag:  # an env flag with a false value resets the option
            comp.reset(name)
            comp.settings.append(OptionSetting(name, "unset", source, line, written))
            return
        text: Any
        parsed: Any
        try:
            text, parsed = parse_kind(spec.value, value, name, self._value_ignored)
        except V.InvalidValue as exc:
            self.diag(O207_INVALID_VALUE, f"{exc} (in `{written}`)", line)
            if spec.value not in _CHECKED_AFTER_MERGE:
                return
            # sbatch merges this option first and checks it only before submitting: the value
            # is part of the merged options even though the script is refused
            text, parsed = value, _Invalid(value)
        previous = comp.state.get(name)
        if spec.value == "mail_type" and previous is not None:
            parsed = tuple(dict.fromkeys(tuple(previous.parsed) + tuple(parsed)))
        if name in _SHARED:
            group = _SHARED[name]
            if group == "spec":  # one field: the other option now reads as unset
                shared_text, other_text = text, "unset"
            else:
                shared_text = text if name == "exclusive" else name
                other_text = shared_text
            for other, g in _SHARED.items():
                if g == group and other != name and other in comp.state:
                    o = comp.state[other]
                    comp.state[other] = _Value(other_text, o.parsed, o.source, o.line)
            text = shared_text
        if spec.value == "mail_type":
            text = ",".join(parsed) if parsed else "NONE"
        if source == DIRECTIVE and written.startswith("-") and spec.value != "mail_type":
            comp.history.setdefault(name, []).append((line, text))
        comp.set(name, _Value(text, parsed, source, line))
        if name == "extra-node-info" and isinstance(parsed, tuple):
            # -B writes the sockets/cores/threads fields; options already set now read those values
            for part, other in zip(parsed, ("sockets-per-node", "cores-per-socket", "threads-per-core")):
                if part is not None and other in comp.state:
                    o = comp.state[other]
                    comp.state[other] = _Value(str(part), part, o.source, o.line)
        comp.settings.append(OptionSetting(name, "" if text is None else text, source, line, written))
        if source == DIRECTIVE and _expands(value):
            self.diag(O213_NOT_EXPANDED, _not_expanded(written), line, _NOT_EXPANDED_FIX)

    def apply_planned(
        self, comp: _Component, directives: Sequence[Directive], plans: Sequence[tuple[_PlannedOption, ...]]
    ) -> None:
        """`apply_parsed` for the directive lines of a component when every line is self-contained
        (`_line_plan`): the same diagnostics, settings and state, in the same order."""
        diags = self.diags
        state, order, settings, history = comp.state, comp.order, comp.settings, comp.history
        tick = comp.tick
        for d, plan in zip(directives, plans):
            line = d.line
            for how, name, text, parsed, shown, written, notes, expands, spec, value in plan:
                if notes:
                    for severity, code, message, suggestion in notes:
                        diags.append(Diagnostic(severity, code, message, line, suggestion))
                if how:
                    if how == _APPLY:
                        comp.tick = tick
                        self.apply(comp, spec, value, DIRECTIVE, line, written)
                        tick = comp.tick
                    continue
                if name in history:
                    history[name].append((line, text))
                else:
                    history[name] = [(line, text)]
                tick += 1
                state[name] = _Value(text, parsed, DIRECTIVE, line)
                order[name] = tick
                settings.append(OptionSetting(name, shown, DIRECTIVE, line, written))
                if expands is not None:
                    self.diag(O213_NOT_EXPANDED, expands, line, _NOT_EXPANDED_FIX)
        comp.tick = tick

    def apply_parsed(self, comp: _Component, opts: Sequence[ParsedOption], source: str) -> None:
        for po in opts:
            if po.spec is None:  # plugin option: recorded, not applied
                assert po.spank is not None  # no spec: a SPANK plugin option
                plugin, option = po.spank
                if plugin in ACCEPTED_PLUGINS:  # Shifter: accepted as sbatch with the plugin accepts it
                    self._shifter_option(option, po)
                comp.spank[option] = (plugin, po.value)
                comp.settings.append(OptionSetting(option, po.value or "", source, po.line, po.written))
                continue
            self._note_spelling(po, source)
            if po.spec.early_pass and source == DIRECTIVE:
                # sbatch reads these in its first pass over the command line only
                self.diag(O223_COMMAND_LINE_ONLY, _command_line_only(po.written, po.spec), po.line, "remove the line")
                continue
            self.apply(comp, po.spec, po.value, source, po.line, po.written)

    def _shifter_option(self, option: str, po: ParsedOption) -> None:
        """O227 when the Shifter plugin refuses the value (sbatch exits), else O226: read as the plugin
        reads it. A documented exception to the oracle (options.ACCEPTED_PLUGINS)."""
        problem = shifter_value_problem(option, po.value)
        if problem is not None:
            self.diag(O227_SHIFTER_REFUSES, f"sbatch with NERSC's Shifter plugin refuses this: {problem}", po.line)
            return
        self.diag(
            O226_SHIFTER_OPTION,
            f"`--{option}` is an option of the shifter SPANK plugin (NERSC): sbatch with the plugin accepts "
            f"`{po.written}` and it is read as the plugin reads it (plain sbatch 22.05 would refuse it)",
            po.line,
        )

    def _note_spelling(self, po: ParsedOption, source: str) -> None:
        for code, message, suggestion in _spelling_notes(po):
            self.diag(code, message, po.line, suggestion)

    def report_getopt(self, errors: Sequence[GetoptError], source: str) -> None:
        for e in errors:
            code = _GETOPT_CODES[e.kind]
            where = "" if source == DIRECTIVE else f" ({'command line' if source == CLI else 'environment'})"
            if e.kind == "spank":
                assert e.spank is not None  # getopt names the plugin of every spank error
                plugin, name = e.spank
                if plugin in ACCEPTED_PLUGINS:
                    continue  # reported with its value by apply_parsed (O226/O227)
                self.diag(
                    code,
                    f"`--{name}` is an option of the {plugin} SPANK plugin, not of sbatch itself: "
                    f"sbatch 22.05 without that plugin refuses it ({e.message}){where}",
                    e.line,
                    "keep it only for sites that have this plugin",
                )
            elif e.kind == "stray-word":
                self.diag(
                    code,
                    f"{e.message}{where}: getopt stops at the first word that is not an option",
                    e.line,
                    "quote values that contain spaces; optional arguments need `=`",
                )
            elif e.kind == "ambiguous":
                self.diag(code, f"{e.message}{where}", e.line, "write the option name in full")
            else:
                self.diag(code, f"{e.message}{where}", e.line)

    # ---- #PBS / #BSUB ---------------------------------------------------------------------

    def apply_wrapper(self, comp: _Component, tr: Translation, report: bool) -> None:
        n_diags = len(self.diags)
        for t in tr.applied:
            spec = CANONICAL[t.option]
            value = t.value
            prev = comp.state.get(t.option)
            if t.append and prev is not None and prev.value:
                value = f"{prev.value},{value}"
            self.apply(comp, spec, value, DIRECTIVE, t.line, t.written)
            if report:
                self.diag(
                    O220_WRAPPER_TRANSLATED,
                    f"`{t.written}` is translated by sbatch to --{t.option}"
                    + (f"={value}" if value else "")
                    + " and overrides #SBATCH",
                    t.line,
                    "write it as an #SBATCH directive (or submit with --ignore-pbs)",
                )
        if report:
            for line, msg in tr.errors:
                self.diag(O221_WRAPPER_ERROR, f"#{tr.family}: {msg}", line)
            for line, msg in tr.ignored:
                self.diag(O222_WRAPPER_IGNORED, msg, line)
        else:
            del self.diags[n_diags:]

    # ---- environment ---------------------------------------------------------------------

    def apply_env(self, comp: _Component, env: Mapping[str, str]) -> None:
        for key in sorted(env):
            if not key.startswith("SBATCH_") and key not in ENV_OPTIONS:
                continue
            value = env[key]
            name = ENV_OPTIONS.get(key)
            if name is None:
                if key not in ENV_ONLY and comp.index == 0:
                    self.diag(O214_UNKNOWN_ENV, f"{key} is not an input variable of sbatch 22.05; it is ignored", None)
                continue
            spec = CANONICAL[name]
            written = f"{key}={value}"
            if spec.arg == NONE:
                # flags from env: set when empty, "yes" or a non-zero number; anything else resets
                is_set = value == "" or V.c_lower(value) == "yes" or _nonzero_int(value)
                self.apply(comp, spec, None, ENV, None, written, reset_flag=not is_set)
                continue
            self.apply(comp, spec, None if spec.arg == OPTIONAL and value == "" else value, ENV, None, written)

    # ---- checks after merging ------------------------------------------------------------

    def _verify_wrapped_counts(self, comp: _Component) -> None:
        """sbatch's own checks of the task and CPU counts, made on the C int the value was stored in:
        `-n 4294967295` wraps to -1 and `-c 4294967296` to 0, which sbatch then refuses (a task count
        that wraps to 0 is accepted and means "not set")."""
        st = comp.state
        ntasks, cpus = st.get("ntasks"), st.get("cpus-per-task")
        if ntasks is not None and isinstance(ntasks.parsed, int) and ntasks.parsed < 0:
            self.diag(
                O207_INVALID_VALUE,
                f"invalid number of tasks (-n {ntasks.parsed}): the --ntasks value does not "
                "fit sbatch's 32-bit int and wraps around",
                ntasks.line,
                "give a count below 2147483648",
            )
        if cpus is not None and isinstance(cpus.parsed, int) and cpus.parsed <= 0:
            self.diag(
                O207_INVALID_VALUE,
                f"invalid number of cpus per task (-c {cpus.parsed}): the --cpus-per-task "
                "value does not fit sbatch's 32-bit int and wraps around",
                cpus.line,
                "give a count below 2147483648",
            )

    def _verify_gpus(self, comp: _Component) -> None:
        """The GPU request checks sbatch makes before submitting (gres_job_state_validate)."""
        st = {k: v for k, v in comp.state.items() if k not in comp.dropped} if comp.dropped else comp.state

        def count(name):
            v = st.get(name)
            if v is None or isinstance(v.parsed, _Invalid):
                return None
            return V.gpu_count_and_type(v.parsed)[0]

        line_of = lambda n: st[n].line if n in st else None  # noqa: E731
        total = count("gpus")
        per_node = count("gpus-per-node")
        if per_node is None:
            per_node = count("gres")
        per_task = count("gpus-per-task")
        any_gpu = any(n in st for n in ("gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket")) or (
            "gres" in st and count("gres") is not None
        )
        gpu_items = [
            (name, item)
            for name in ("gres", "gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket")
            if name in st and not isinstance(st[name].parsed, _Invalid) and st[name].parsed
            for item in st[name].parsed
            if item.name == "gpu"
        ]
        typed: list[str] = sorted({n for n, i in gpu_items if i.type})
        untyped = sorted({n for n, i in gpu_items if not i.type})
        cpg = st.get("cpus-per-gpu")
        if gpu_items and cpg is not None and cpg.parsed == -1:
            # 4294967295 wraps to -1 and sbatch writes it as `gres:gpu:-1`: GRES parsing then takes
            # "-1" for a GPU type, so it clashes with untyped GPU requests (checked on the oracle)
            typed = sorted(set(typed) | {"cpus-per-gpu"})
        # (a mix inside one option is already refused when its value is parsed)
        if typed and untyped and len(set(typed) | set(untyped)) > 1:
            self.diag(
                O208_CONFLICT,
                "GPUs are asked both with a type ("
                + ", ".join("--" + n for n in typed)
                + ") and without one ("
                + ", ".join("--" + n for n in untyped)
                + "): sbatch refuses it "
                '("Invalid GRES specification (with and without type identification)")',
                line_of(typed[0]),
                "give the GPU type in every GPU option, or in none",
            )
        if "cpus-per-task" in st and "cpus-per-gpu" in st:
            self.diag(
                O208_CONFLICT,
                "--cpus-per-gpu is mutually exclusive with --cpus-per-task",
                line_of("cpus-per-gpu"),
                "keep one of the two",
            )
        if "mem-per-gpu" in st and not any_gpu:
            self.diag(
                O219_MISSING_REQUIREMENT,
                '--mem-per-gpu without any GPU request: sbatch refuses it ("did not request any GPU")',
                line_of("mem-per-gpu"),
                "request GPUs, or use --mem",
            )
        if (
            "ntasks-per-gpu" in st
            and _stored_u16(st["ntasks-per-gpu"].parsed)
            and not any_gpu
            and "nodes" not in st
            and "ntasks" not in st
        ):  # a count that wraps to 0 (mod 2**16) is none
            self.diag(
                O219_MISSING_REQUIREMENT,
                "--ntasks-per-gpu needs either a GPU request or a node/task count",
                line_of("ntasks-per-gpu"),
            )
        per_socket = count("gpus-per-socket")
        if per_node and per_socket and per_socket > per_node:
            self.diag(
                O208_CONFLICT,
                f"--gpus-per-socket={per_socket} is more than the {per_node} GPUs per node: sbatch refuses it",
                line_of("gpus-per-socket"),
            )
        if per_node and per_task:
            if per_node % per_task:
                self.diag(
                    O208_CONFLICT,
                    f"the {per_node} GPUs per node are not a multiple of --gpus-per-task={per_task}: sbatch refuses it",
                    line_of("gpus-per-task"),
                )
            else:
                tpn = st.get("ntasks-per-node")
                if tpn is not None and not isinstance(tpn.parsed, _Invalid) and tpn.parsed != per_node // per_task:
                    self.diag(
                        O208_CONFLICT,
                        f"{per_node} GPUs per node at --gpus-per-task={per_task} make "
                        f"{per_node // per_task} tasks per node, not --ntasks-per-node={tpn.parsed}: sbatch "
                        "refuses it",
                        line_of("ntasks-per-node"),
                    )
        if total is None:
            return
        if (per_node is not None and total < per_node) or (per_task is not None and total < per_task):
            self.diag(
                O208_CONFLICT,
                f"--gpus={total} is less than the GPUs asked per node or per task; sbatch "
                'refuses it ("Failed to ensure --gpus >= --gres=gpu/--gpus-per-node >= --gpus-per-socket")',
                line_of("gpus"),
            )
            return
        if per_node and total % per_node:
            self.diag(
                O208_CONFLICT, f"--gpus={total} is not a multiple of the {per_node} GPUs per node", line_of("gpus")
            )
            return
        if per_task and total % per_task:
            self.diag(O208_CONFLICT, f"--gpus={total} is not a multiple of --gpus-per-task={per_task}", line_of("gpus"))
        elif per_task:
            nt = st.get("ntasks")
            if nt is not None and not isinstance(nt.parsed, _Invalid) and nt.parsed != total // per_task:
                self.diag(
                    O208_CONFLICT,
                    f"--gpus={total} at --gpus-per-task={per_task} makes {total // per_task} "
                    f"tasks, not -n {nt.parsed}: sbatch refuses it",
                    line_of("ntasks"),
                )
        nodes = _massaged_nodes(st)
        if nodes is None:
            return
        lo, hi = nodes
        if total < lo:
            self.diag(
                O208_CONFLICT,
                f"--gpus={total} is less than the {lo} nodes: sbatch refuses it "
                '("--gpus < -N"; every node needs at least one GPU)',
                line_of("gpus"),
            )
        elif per_node and total % per_node == 0:
            need = total // per_node
            if need < lo or (hi and need > hi):
                bounds = f"{lo}" if lo == hi else f"{lo}-{hi}"
                self.diag(
                    O208_CONFLICT,
                    f"--gpus={total} at {per_node} per node needs {need} nodes, but the job "
                    f"has {bounds} (after -n {st['ntasks'].parsed} limits the nodes)"
                    if "ntasks" in st
                    and not isinstance(st["ntasks"].parsed, _Invalid)
                    and st["ntasks"].parsed < (st["nodes"].parsed[1] or 10**9)
                    else f"--gpus={total} at {per_node} per node needs {need} nodes, but the job has {bounds}",
                    line_of("gpus"),
                    "make --nodes, --ntasks and the GPU counts consistent",
                )

    def report_overrides(self, comp: _Component) -> None:
        """One O212 per option that #SBATCH lines set to different values (the last one wins)."""
        for name, settings in comp.history.items():
            if len(settings) < 2 or len({text for _, text in settings}) < 2:
                continue
            last_line, last_text = settings[-1]
            lines = [ln for ln, _ in settings]
            shown = ", ".join(str(ln) for ln in lines[:6]) + (", ..." if len(lines) > 6 else "")
            self.diag(
                O212_OVERRIDDEN,
                f"--{name} is set {len(settings)} times by #SBATCH lines (lines {shown}); "
                f"the last one wins: --{name}={last_text}",
                last_line,
                "keep only the line you mean",
            )

    def verify(self, comp: _Component) -> None:
        self.report_overrides(comp)
        st = comp.state
        line_of = lambda n: st[n].line if n in st else None  # noqa: E731
        self._verify_wrapped_counts(comp)
        mem = ("mem", "mem-per-cpu", "mem-per-gpu")
        cli = [m for m in mem if comp.by_cli(m)]
        if len(cli) > 1:
            where = ", ".join(
                f"--{m}" + (f" (line {st[m].line})" if st[m].line is not None else f" ({st[m].source})") for m in cli
            )
            het = (
                " in this hetjob component (options such as --mem carry over from the previous one)"
                if comp.index
                else ""
            )
            self.diag(
                O208_CONFLICT,
                f"--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive{het}; set: {where}",
                line_of(cli[-1]),
                "keep only one memory option",
            )
        elif len(cli) == 1:
            for m in mem:
                if m != cli[0] and comp.by_env(m):
                    comp.dropped.add(m)
                    self.diag(
                        O218_ENV_IGNORED,
                        f"the environment's --{m} is ignored because --{cli[0]} is set",
                        line_of(cli[0]),
                    )
        elif sum(comp.by_env(m) for m in mem) > 1:
            self.diag(
                O208_CONFLICT,
                "SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually exclusive",
                None,
            )
        if "ntasks-per-gpu" in st:
            for other in ("gpus-per-task", "gpus-per-socket", "ntasks-per-node"):
                if other in st:
                    self.diag(O208_CONFLICT, f"--{other} is mutually exclusive with --ntasks-per-gpu", line_of(other))
        if comp.by_cli("core-spec") and comp.by_cli("thread-spec"):
            self.diag(
                O208_CONFLICT, "-S/--core-spec and --thread-spec options are mutually exclusive", line_of("thread-spec")
            )
        self._verify_gpus(comp)
        # a zero GPU count is no request at all: slurmctld makes no per-task/per-socket check for it
        if "gpus-per-task" in st and _gpu_count(st, "gpus-per-task") != 0 and not _has_task_count(st):
            self.diag(
                O219_MISSING_REQUIREMENT,
                "--gpus-per-task used without either --gpus or -n/--ntasks is not allowed",
                line_of("gpus-per-task"),
                "add --ntasks (or --nodes with --ntasks-per-node)",
            )
        if "gpus-per-socket" in st and _gpu_count(st, "gpus-per-socket") != 0 and "sockets-per-node" not in st:
            self.diag(
                O219_MISSING_REQUIREMENT,
                "--gpus-per-socket option requires --sockets-per-node specification",
                line_of("gpus-per-socket"),
            )
        if "gres" in st and not isinstance(st["gres"].parsed, _Invalid):
            items = st["gres"].parsed
            names = sorted({i.name for i in items if i.name != "gpu"})
            if names:
                self.diag(
                    O215_SITE_GRES,
                    f"GRES {', '.join(names)} must be configured on the cluster "
                    "(sbatch refuses GRES names the site does not define)",
                    line_of("gres"),
                )
            if any(i.name == "gpu" for i in items) and "gpus-per-node" in st:
                self.diag(
                    O216_DOUBLE_GPU_REQUEST,
                    "both --gres=gpu and --gpus-per-node ask for GPUs per node; Slurm 22.05 keeps both requests",
                    line_of("gpus-per-node"),
                    "keep one of the two",
                )
        if "exclusive" in st and "oversubscribe" in st:
            winner = (
                "exclusive" if comp.order.get("exclusive", 0) > comp.order.get("oversubscribe", 0) else "oversubscribe"
            )
            self.diag(
                O217_SHARED_SETTING,
                f"--exclusive and --oversubscribe set the same Slurm field; the later one (--{winner}) wins",
                line_of(winner),
            )
        if "requeue" in st and "no-requeue" in st:
            winner = "requeue" if comp.order.get("requeue", 0) > comp.order.get("no-requeue", 0) else "no-requeue"
            self.diag(
                O217_SHARED_SETTING,
                f"--requeue and --no-requeue set the same Slurm field; the later one (--{winner}) wins",
                line_of(winner),
            )
        dist = st.get("distribution")
        if dist is not None and isinstance(dist.parsed, str):
            if dist.parsed.startswith("arbitrary") and "nodelist" not in st:
                self.diag(
                    O219_MISSING_REQUIREMENT,
                    "With Arbitrary distribution you need to specify a nodelist or hostfile with the -w option",
                    dist.line,
                    "add -w/--nodelist",
                )
            plane = V.plane_size(dist.parsed)
            if plane:
                nt = st["ntasks"].parsed if "ntasks" in st and isinstance(st["ntasks"].parsed, int) else 1
                nodes = st["nodes"].parsed[0] if "nodes" in st and isinstance(st["nodes"].parsed, tuple) else 1
                if (nodes <= 0 or nt // plane < nodes) and (nodes - 1) * plane >= nt:
                    self.diag(
                        O208_CONFLICT,
                        f"Too few processes for the requested {{plane,node}} distribution "
                        f"(-n {nt} on {nodes} nodes with plane={plane})",
                        dist.line,
                    )
        b, d = st.get("begin"), st.get("deadline")
        if b is not None and d is not None:
            bs, ds = V.relative_seconds(b.value or ""), V.relative_seconds(d.value or "")
            if bs is not None and ds is not None and ds < bs:
                self.diag(
                    O208_CONFLICT,
                    "Incompatible begin and deadline time specification (the deadline is before the begin time)",
                    d.line,
                )
        for name, what in (
            ("nodefile", "reads the node file"),
            ("export-file", "reads the environment file"),
            ("bbf", "reads the burst buffer file"),
        ):
            if name in st:
                self.diag(
                    O225_SUBMIT_HOST_DEPENDENT,
                    f"--{name}={st[name].value}: sbatch {what} at submit time "
                    "(relative to the submit directory) and refuses the job if it cannot",
                    line_of(name),
                )
        if "nodelist" in st and "/" in (st["nodelist"].value or ""):
            self.diag(
                O225_SUBMIT_HOST_DEPENDENT,
                f"--nodelist={st['nodelist'].value}: a value with `/` is a file "
                "of node names that sbatch reads at submit time; it refuses the job if it cannot",
                line_of("nodelist"),
            )
        for name in ("clusters", "uid", "gid"):
            if name in st:
                self.diag(
                    O225_SUBMIT_HOST_DEPENDENT,
                    f"--{name}={st[name].value}: checked by sbatch against the "
                    "submit host (cluster database, user and group names); not verifiable here",
                    line_of(name),
                )
        if "array" in st:
            for p in _array_problems(st["array"].value or ""):
                self.diag(
                    O209_CONTROLLER_REJECTS,
                    f"--array={V.clip_text(st['array'].value or '', 60)}: {p}; slurmctld refuses the job "
                    f'("Invalid job array specification")',
                    line_of("array"),
                )
        if "dependency" in st:
            for p in _dependency_problems(st["dependency"].value or ""):
                self.diag(
                    O209_CONTROLLER_REJECTS,
                    f"--dependency={V.clip_text(st['dependency'].value or '', 60)}: {p}; slurmctld refuses "
                    f'the job ("Job dependency problem")',
                    line_of("dependency"),
                )


def _spelling_notes(po: ParsedOption) -> list[tuple[str, str, str | None]]:
    """(code, message, suggestion) of the O210/O211 notes on how a long option was spelt."""
    w = po.written
    if not w.startswith("--") or po.spec is None:
        return []
    notes: list[tuple[str, str, str | None]] = []
    typed = w[2:].split("=", 1)[0].split(" ", 1)[0]
    if typed != po.spec.name:
        notes.append(
            (
                O210_ABBREVIATION,
                f"`--{typed}` is an abbreviation of `--{po.spec.name}` (getopt accepts unique prefixes)",
                f"write `--{po.spec.key}` in full",
            )
        )
    if po.spec.canonical:
        notes.append((O211_ALIAS, f"`--{po.spec.name}` is a hidden alias of `--{po.spec.canonical}`", None))
    return notes


def _command_line_only(written: str, spec: OptionSpec) -> str:
    return f"`{written}` has no effect in a #SBATCH line: sbatch reads --{spec.key} only from its command line"


def _expands(value: str | None) -> bool:
    """Whether a directive value holds what a shell would expand (sbatch does not: O213)."""
    return bool(value) and ("$" in value or value[0] == "~")  # type: ignore[index,operator]


def _not_expanded(written: str) -> str:
    return f"`{written}`: sbatch does not expand `$` or `~` in #SBATCH lines; the value is used literally"


_NOT_EXPANDED_FIX = "write the value out, or pass it on the sbatch command line where the shell expands it"


_R = TypeVar("_R")


def _per_process(fn: Callable[[str], _R]) -> Callable[[str], _R]:
    """`fn` (pure in one string, with an immutable result) remembered per process for values of at
    most 512 characters, in a table of at most 1024 values (cleared when full)."""
    table: dict[str, _R] = {}

    def remembered(value: str) -> _R:
        try:
            return table[value]
        except KeyError:
            pass
        got = fn(value)
        if len(value) <= 512:
            keep(table, value, got, 1024)
        return got

    return remembered


@_per_process
def _array_fields(value: str) -> tuple[str, int | None]:
    """(array, array_throttle) of the job fields for an --array value."""
    array, throttle = V.split_array(value)
    array = V.c_strip(array)
    if array.startswith("[") and array.endswith("]"):
        array = array[1:-1]
    return array, throttle or None  # %0 means no limit (Slurm stores no throttle)


@_per_process
def _array_problems(value: str) -> tuple[str, ...]:
    """What slurmctld refuses in an --array value (O209)."""
    spec, _thr = V.split_array(value)
    return tuple(V.array_indexes(spec)[1])


_dependency_problems = _per_process(lambda value: tuple(V.dependency_problems(value)))
_normalised_dependency = _per_process(V.normalise_dependency)


def _nonzero_int(s: str) -> bool:
    """A whole (ASCII) decimal number other than 0; Python's int() would also take '٣' or '1_0'."""
    v = V.c_strip(s)
    return bool(V._INT_RE.match(v)) and V.to_int(v) != 0


def _names_ignore_pbs(word: str) -> bool:
    if not word.startswith("--") or len(word) < 3:
        return False
    found, _ = match_long(word[2:].split("=", 1)[0])
    return found is not None and found.name == "ignore-pbs"


def _is_separator(words: Sequence[str]) -> bool:
    # c_lower keeps the length: only 6- and 7-character words can be `hetjob`/`packjob`
    return bool(words) and len(words[0]) in (6, 7) and V.c_lower(words[0]) in ("hetjob", "packjob")


_COMPONENT_OF = attrgetter("component")


def _directives_by_component(script: Script) -> dict[int, list[Directive]]:
    """The directive lines of each component, in one pass over the directives (a het job with
    thousands of components would otherwise rescan every directive for each one)."""
    directives = script.directives
    components = set(map(_COMPONENT_OF, directives))
    if len(components) <= 1:  # the common case: one component
        return {components.pop(): list(directives)} if components else {}
    out: dict[int, list[Directive]] = {}
    for d in directives:
        lines = out.get(d.component)
        if lines is None:
            out[d.component] = [d]
        else:
            lines.append(d)
    return out


def _component_words(directives: Sequence[Directive]) -> list[tuple[str, int]]:
    """The argv sbatch builds from a component's directive lines, each word with its line.

    sbatch's get_argument returns nothing for an empty word (`-J ""`), which also ends the
    reading of that line: the words after it on the same line are never seen.
    """
    words: list[tuple[str, int]] = []
    for d in directives:
        if _is_separator(d.words):
            continue
        for w in d.words:
            if w == "":
                break
            words.append((w, d.line))
    return words


# How a planned option is applied (the first item of its `_plan_option` row)
_MERGE, _SKIP, _APPLY = 0, 1, 2

# (how, name, text, parsed, shown, written, notes, expands, spec, value)
_PlannedOption = tuple[int, str, Any, Any, Any, str, tuple, "str | None", OptionSpec, "str | None"]


def _plan_option(po: ParsedOption) -> _PlannedOption:
    """One option of a self-contained directive line (see `_line_plan`), with everything about it that
    does not depend on the line number or on the other options: what getopt returned, the notes on its
    spelling (severity, code, message, suggestion), the O213 message, and how it is applied: `_SKIP`
    (read from the command line only: O223), `_MERGE` (a plain merge of its validated value `text`,
    `parsed`; `shown` is the setting's value) or `_APPLY` (through `_Resolver.apply`: options whose
    merge reads or writes other options, values that are refused or noted)."""
    spec = po.spec
    assert spec is not None  # a line with a plugin option is not self-contained (getopt reports it)
    name, value, written = spec.key, po.value, po.written
    notes = [(CODES[code], code, message, suggestion) for code, message, suggestion in _spelling_notes(po)]
    expands = _not_expanded(written) if _expands(value) else None
    text = parsed = shown = None
    if spec.early_pass:  # sbatch reads these in its first pass over the command line only
        how = _SKIP
        notes.append(
            (
                CODES[O223_COMMAND_LINE_ONLY],
                O223_COMMAND_LINE_ONLY,
                _command_line_only(written, spec),
                "remove the line",
            )
        )
    elif spec.value in _NOTING_KINDS or spec.value == "mail_type" or name in _SHARED or name == "extra-node-info":
        how = _APPLY
    else:
        try:
            text, parsed = parse_kind(spec.value, value, name, _never_noted)
        except V.InvalidValue:
            how = _APPLY
        else:
            how = _MERGE
            shown = "" if text is None else text
    return (how, name, text, parsed, shown, written, tuple(notes), expands, spec, value)


def _never_noted(message: str) -> None:  # pragma: no cover - only the kinds in _NOTING_KINDS note
    raise AssertionError(message)


def _make_line_plan(words: tuple[str, ...]) -> tuple[_PlannedOption, ...] | None:
    if _is_separator(words):
        return ()
    if "" in words:
        words = words[: words.index("")]
    if "--" in words:  # getopt stops there: the words of the next lines would be stray
        return None
    if len(words) == 1 and words[0].startswith("--"):
        # `--name=value` with the exact name of an option taking an argument, the common line: what getopt
        # returns for it, without running getopt
        name, eq, inline = words[0][2:].partition("=")
        spec = LONG_OPTIONS.get(name)
        if eq and spec is not None and spec.arg != NONE:
            return (_plan_option(ParsedOption(spec, inline, 0, words[0])),)
    parsed = getopt_long([(w, 0) for w in words])
    if parsed.errors or parsed.rest:
        return None
    return tuple(_plan_option(po) for po in parsed.options)


# directive words -> the plan of the line, or None when the line is not self-contained; per process,
# bounded (4096 lines of at most 512 characters). A line is self-contained when getopt, reading it
# alone, takes all its words as options and their values without any error and without `--`: then
# getopt over a component's lines reads each such line exactly so, whatever the lines around it.
_LINE_PLANS: dict[tuple[str, ...], tuple[_PlannedOption, ...] | None] = {}
_LINE_PLANS_LIMIT = 4096
_UNKNOWN = object()  # a line not in _LINE_PLANS yet


def _line_plan(words: tuple[str, ...]) -> tuple[_PlannedOption, ...] | None:
    try:
        return _LINE_PLANS[words]
    except KeyError:
        pass
    plan = _make_line_plan(words)
    if sum(map(len, words)) <= 512:
        keep(_LINE_PLANS, words, plan, _LINE_PLANS_LIMIT)
    return plan


def _split_cli_components(args: Sequence[str]) -> list[list[str]]:
    comps: list[list[str]] = [[]]
    for a in args:
        if a == ":":
            comps.append([])
        else:
            comps[-1].append(a)
    return comps


def default_job_name(path: str) -> str:
    """sbatch's default job name: the script's file name ("sbatch" for standard input)."""
    if path in ("", "-", "<stdin>"):
        return "sbatch"
    return os.path.basename(path)


def resolve(script: Script, env: Mapping[str, str] | None = None, cli_args: Sequence[str] = ()) -> SlurmJob:
    """Resolve a read script into the job sbatch would submit (see module docstring)."""
    env = dict(env or {})
    r = _Resolver()
    by_component = _directives_by_component(script)
    n_components = max(1, script.components, 1 + max(by_component, default=0))
    cli_components = _split_cli_components(cli_args)
    wrapper = None
    if script.foreign and "--ignore-pbs" not in cli_args and "SBATCH_IGNORE_PBS" not in env:
        from translator.slurm.foreign import BSUB, PBS, translate  # only scripts with #PBS/#BSUB lines

        family = BSUB if any(f.family == BSUB for f in script.foreign) else PBS
        wrapper = translate([(f.line, f.text) for f in script.foreign if f.family == family], family)
        if any(_names_ignore_pbs(w) for d in script.directives for w in d.words):
            wrapper = None  # `#SBATCH --ignore-pbs` (or an abbreviation of it) turns the translation off
    components: list[JobComponent] = []
    carried: dict[str, _Value] = {}
    known = _LINE_PLANS.get
    for index in range(n_components):
        first_diag = len(r.diags)
        comp = _Component(index, carried)
        directives = by_component.get(index, ())
        plans = [known(d.words, _UNKNOWN) for d in directives]
        if _UNKNOWN in plans:
            plans = [_line_plan(d.words) for d in directives]
        if None in plans:
            parsed = getopt_long(_component_words(directives))
            r.report_getopt(parsed.errors, DIRECTIVE)
            r.apply_parsed(comp, parsed.options, DIRECTIVE)
        else:
            r.apply_planned(comp, directives, plans)  # type: ignore[arg-type]  # no None in plans
        if wrapper is not None:
            r.apply_wrapper(comp, wrapper, report=index == 0)
        r.apply_env(comp, env)
        cli = cli_components[index] if index < len(cli_components) else []
        if cli:
            cparsed = getopt_long([(a, None) for a in cli])
            r.report_getopt(cparsed.errors, CLI)
            r.apply_parsed(comp, cparsed.options, CLI)
        r.verify(comp)
        refused_here = script.sbatch_refuses or any(
            d.severity == ERROR or d.code == O206_PLUGIN_OPTION for d in r.diags[first_diag:]
        )
        components.append(_finish(comp, script.path, submitted=not refused_here))
        if index + 1 < n_components:
            carried = {k: v for k, v in comp.state.items() if not CANONICAL[k].per_component}
    # a hetjob reads the environment and carried options once per component: report each once
    diags = list(script.diagnostics) + list(dict.fromkeys(r.diags))
    diags.sort(key=lambda d: d.line if d.line is not None else 10**9)
    refused = script.sbatch_refuses or any(
        d.code.startswith("O") and (d.severity == ERROR or d.code == O206_PLUGIN_OPTION) for d in r.diags
    )
    return SlurmJob(
        path=script.path, components=tuple(components), diagnostics=tuple(diags), sbatch_accepts=not refused
    )


def _finish(comp: _Component, path: str, submitted: bool = True) -> JobComponent:
    st = comp.state
    options: dict[str, str] = {}
    for name in sorted(st):
        v = st[name].value
        options[name] = "" if v is None else v
    for name, (_plugin, value) in comp.spank.items():
        options[name] = "" if value is None else value
    return JobComponent(
        index=comp.index,
        options=options,
        settings=tuple(comp.settings),
        fields=job_fields(
            {k: v for k, v in st.items() if k not in comp.dropped} if comp.dropped else st, path, submitted
        ),
    )


def job_fields(st: Mapping[str, _Value], path: str, submitted: bool = True) -> JobFields:
    """The contract fields. When sbatch submits the job (`submitted`), node counts are the ones
    slurmctld records (after `-n` and the GPU layout adjust them); when it refuses the job, they
    are the merged options as written."""

    raw: Callable[[str], Any] = {k: v.value for k, v in st.items()}.get  # an option's value string (None: unset)
    parsed: Callable[[str], Any] = {k: v.parsed for k, v in st.items()}.get  # its parsed value (None: unset)

    def gpu(name):
        v = parsed(name)
        if v is None:
            return None, None
        if isinstance(v, _Invalid):
            raw_value = v.raw or ""
            if name == "gres":
                items = [
                    i for i in raw_value.split(",") if i.replace("gres:", "").replace("gres/", "").startswith("gpu")
                ]
                if not items:
                    return None, None
                raw_value = items[-1]
            return V.lenient_gpu_spec(raw_value)
        return V.gpu_count_and_type(v)

    gpn_count = gpn_type = None
    if "gpus-per-node" in st:
        gpn_count, gpn_type = gpu("gpus-per-node")
    elif "gres" in st:
        gpn_count, gpn_type = gpu("gres")
    gpt_count, gpt_type = gpu("gpus-per-task")
    tot_count, tot_type = gpu("gpus")
    gpu_type = gpn_type or tot_type or gpt_type
    if gpu_type is None and "gres" in st and "gpus-per-node" in st:
        gpu_type = gpu("gres")[1]
    mem_per_cpu = parsed("mem-per-cpu")
    mem_per_node = parsed("mem")
    if mem_per_cpu == 0:  # Slurm stores --mem-per-cpu=0 as "all the memory of the node"
        mem_per_cpu = None
        if mem_per_node is None:
            mem_per_node = 0
    ntasks = parsed("ntasks")
    if submitted:
        nodes_min, nodes_max = _job_nodes(st, tot_count, gpn_count)
        per_gpu = parsed("ntasks-per-gpu")
        if isinstance(per_gpu, int) and ntasks is not None and not isinstance(ntasks, _Invalid):
            # slurmctld derives the task count from --ntasks-per-gpu and the GPU request
            if tot_count:
                ntasks = per_gpu * tot_count
            elif gpn_count:
                ntasks = per_gpu * gpn_count * max(nodes_min or 1, 1)
    else:
        nv = st.get("nodes")
        nodes_min, nodes_max = (
            (nv.parsed[0], nv.parsed[1] or None)
            if nv is not None and not isinstance(nv.parsed, _Invalid)
            else (None, None)
        )
    array = throttle = None
    if raw("array"):
        array, throttle = _array_fields(raw("array") or "")
    exclusive = None
    if "exclusive" in st:
        exclusive = raw("exclusive") in ("exclusive", "user", "mcs")
    requeue = None
    if "requeue" in st or "no-requeue" in st:
        requeue = (raw("requeue") or raw("no-requeue")) == "requeue"
    job_name = raw("job-name") if "job-name" in st else default_job_name(path)

    def nonempty(name):  # slurmctld stores an empty account/array/constraint/dependency as none
        v = raw(name)
        return v if v else None

    return JobFields(
        job_name=job_name,
        partition=raw("partition"),
        account=nonempty("account"),
        qos=raw("qos"),
        nodes_min=nodes_min,
        nodes_max=nodes_max,
        ntasks=_refused_if(ntasks, lambda n: n < 0),
        ntasks_per_node=_stored_u16(parsed("ntasks-per-node")),
        cpus_per_task=_refused_if(parsed("cpus-per-task"), lambda n: n < 0),
        gpus_per_node=gpn_count,
        gpus_per_task=gpt_count,
        gpus_total=tot_count,
        gpu_type=gpu_type,
        mem_per_node_mb=mem_per_node,
        mem_per_cpu_mb=mem_per_cpu,
        mem_per_gpu_mb=parsed("mem-per-gpu"),
        time_limit_seconds=parsed("time"),
        array=array,
        array_throttle=throttle,
        dependency=_normalised_dependency(raw("dependency")) if raw("dependency") else None,
        exclusive=exclusive,
        constraint=nonempty("constraint"),
        output=raw("output"),
        error=raw("error"),
        chdir=raw("chdir"),
        requeue=requeue,
        signal=raw("signal"),
        export=raw("export"),
        comment=raw("comment"),
    )


def _gpu_count(st, name: str) -> int | None:
    """The GPU count an option asks for (None when unset, invalid or without a GPU item)."""
    v = st.get(name)
    if v is None or isinstance(v.parsed, _Invalid) or not v.parsed:
        return None
    return V.gpu_count_and_type(v.parsed)[0]


def _refused_if(n, refused):
    """None for a count sbatch refuses after it wrapped around (see _verify_wrapped_counts)."""
    return None if isinstance(n, int) and not isinstance(n, bool) and refused(n) else n


def _stored_u16(n):
    """What slurmctld keeps of a count sbatch sends in a 16-bit field (job_desc ntasks_per_node):
    a negative int (a value that wrapped, e.g. 4294967295 -> -1) keeps its low 16 bits (65535), and
    0 means not set. A positive count above 65535 is kept as written: sbatch also derives the task
    count from it, and slurmctld refuses such a job ("More processors requested than permitted")."""
    if not isinstance(n, int) or isinstance(n, bool):
        return n
    if n < 0:
        n &= 0xFFFF
    return n or None


def _has_task_count(st) -> bool:
    """Whether sbatch passes a task count with the job (what --gpus-per-task needs): -n, --gpus,
    --ntasks-per-node, or a single node count (sbatch then runs one task per node)."""
    if any(n in st for n in ("ntasks", "gpus", "ntasks-per-node")):
        return True
    v = st.get("nodes")
    return v is not None and not isinstance(v.parsed, _Invalid) and v.parsed[0] == v.parsed[1]


def _massaged_nodes(st) -> tuple[int, int] | None:
    """The node range sbatch submits: `-n` caps the maximum, and a task count below the minimum
    lowers both to it ("can't run N processes on M nodes"); (min, 0) means no maximum."""
    v = st.get("nodes")
    if v is None or isinstance(v.parsed, _Invalid):
        return None
    lo, hi = v.parsed
    t = st.get("ntasks")
    if t is not None and not isinstance(t.parsed, _Invalid):
        n = t.parsed
        if hi and n < hi:
            hi = n
        if n < lo:
            lo = hi = n
    return lo, hi


def _job_nodes(st, gpus_total, gpus_per_node) -> tuple[int | None, int | None]:
    """(nodes_min, nodes_max) of the submitted job, as slurmctld records it."""
    nodes = _massaged_nodes(st)
    if nodes is None:
        return None, None
    lo, hi = nodes
    t = st.get("ntasks")
    if lo == 0 and t is not None and isinstance(t.parsed, int) and t.parsed > 0:
        lo = 1  # slurmctld: tasks need at least one node (`-N 0 -n 2` is 1 node)
    if gpus_total and gpus_per_node and gpus_total % gpus_per_node == 0:
        need = gpus_total // gpus_per_node
        if lo <= need and (not hi or need <= hi):
            lo = hi = need  # the GPU layout fixes the node count inside the range
    if hi and gpus_total and gpus_total < hi:  # a job cannot use more nodes than it asks GPUs
        hi = max(gpus_total, lo)
    return lo, (hi or None)


__all__ = ["resolve", "default_job_name", "CODES"]
