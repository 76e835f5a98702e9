"""`slurm2kf inspect`: how sbatch 22.05 reads each script, line by line or as JSON Lines.

Exit status: 0 when sbatch would accept every script, 1 when it would refuse any (everything is
still printed), 2 for usage errors and unreadable files.
"""

from __future__ import annotations

import os
import sys

import click

from translator.cli.common import USAGE_ERROR, SbatchArgsCommand, echo_user, parse_env_items

_JSON_INERT = {
    c: f"\\u{c:04x}"
    for c in [
        0x7F,
        *range(0x80, 0xA0),
        0x2028,
        0x2029,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
        0x200E,
        0x200F,
        0xFEFF,
    ]
}


def _read_stdin(stream) -> bytes:
    from translator.diagnostics import Diagnostic, ERROR
    from translator.fsio import TOO_LARGE, UserFileError, read_stream
    from translator.read import MAX_FILE_BYTES, R102_UNREADABLE, R103_TOO_LARGE, ReadError

    try:
        return read_stream(stream, "standard input", MAX_FILE_BYTES)
    except UserFileError as exc:
        raise ReadError(
            Diagnostic(ERROR, R103_TOO_LARGE if exc.kind == TOO_LARGE else R102_UNREADABLE, exc.message)
        ) from None


@click.command(name="inspect", cls=SbatchArgsCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--json", "as_json", is_flag=True, help="One JSON object per script per line (the contract).")
@click.option(
    "--sbatch-env",
    "sbatch_env",
    multiple=True,
    metavar="KEY=VALUE",
    help="An SBATCH_* input variable as if set when sbatch runs (repeatable).",
)
@click.option(
    "--inherit-env",
    is_flag=True,
    help="Also read SBATCH_* variables from this process's environment (--sbatch-env wins).",
)
@click.argument("args", nargs=-1, metavar="SCRIPT... [-- SBATCH_ARGS...]")
@click.pass_context
def command(ctx: click.Context, as_json: bool, sbatch_env, inherit_env: bool, args) -> None:
    """Show how sbatch (Slurm 22.05) reads SCRIPT: each directive, ignored lines, diagnostics, the job.

    Options after `--` are sbatch command-line options; they override SBATCH_* variables, which
    override #SBATCH lines, as in sbatch. SCRIPT `-` reads standard input (job name `sbatch`).
    Exit status: 0 sbatch would accept every script, 1 it would refuse one, 2 usage error or
    unreadable file.
    """
    scripts, sbatch_args = _split_args(ctx, list(args))
    if not scripts:
        raise click.UsageError("no SCRIPT given")
    env: dict[str, str] = {}
    if inherit_env:
        env.update(
            {k: v for k, v in os.environ.items() if k.startswith("SBATCH_") or k in ("SLURM_CLUSTERS", "SLURM_HINT")}
        )
    env.update(parse_env_items(sbatch_env))

    from translator.read import ReadError, read_file, read_script
    from translator.slurm.resolve import resolve

    refused = False
    unreadable = False
    for path in scripts:
        try:
            if path == "-":  # like sbatch without a script argument: read standard input
                stdin = sys.stdin
                # capped like a file (R103): an endless pipe (`< /dev/zero`) is refused, not buffered
                data = _read_stdin(stdin.buffer if hasattr(stdin, "buffer") else stdin)
                script = read_script(data, "-")
            else:
                script = read_file(path)
        except ReadError as exc:
            unreadable = True
            echo_user(f"slurm2kf inspect: {exc.diagnostic.format(path)}", err=True)
            continue
        job = resolve(script, env=env, cli_args=sbatch_args)
        refused = refused or not job.sbatch_accepts
        if as_json:
            # U+2028/U+2029 are valid inside JSON strings but are line breaks to str.splitlines():
            # escape them so every record stays on its own line of the JSON Lines stream.
            # DEL and C1 controls (U+009B is a terminal's CSI) are escaped too: the stream is inert text.
            import json

            line = json.dumps(job.to_json(), ensure_ascii=False, sort_keys=False)
            click.echo(line.translate(_JSON_INERT))
        else:
            echo_user(render_human(script, job, env, sbatch_args))
    if unreadable:
        ctx.exit(USAGE_ERROR)
    ctx.exit(1 if refused else 0)


def _split_args(ctx: click.Context, args: list[str]) -> tuple[list[str], list[str]]:
    return list(args), list(ctx.meta.get("slurm2kf.sbatch_args", []))


# ---- human output ----------------------------------------------------------------------------

_SOURCE_LABEL = {"env": "environment", "cli": "command line"}


def _fmt_value(v: object | None) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def _mib(v: int | None) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "0 (all memory of the node)"
    if v % 1024 == 0:
        return f"{v} MiB ({v // 1024} GiB)"
    return f"{v} MiB"


def _seconds(v: int | None) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "unlimited"
    d, rem = divmod(v, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    text = f"{h:02d}:{m:02d}:{s:02d}"
    return f"{v} s ({d}-{text})" if d else f"{v} s ({text})"


def render_human(script, job, env, sbatch_args) -> str:
    from translator.slurm.options import CANONICAL

    out: list[str] = []
    verdict = "sbatch would ACCEPT this script" if job.sbatch_accepts else "sbatch would REFUSE this script"
    out.append(f"== {script.path}: {verdict}")
    by_line: dict[int, list] = {}
    for comp in job.components:
        for s in comp.settings:
            if s.source == "directive" and s.line is not None:
                by_line.setdefault(s.line, []).append((comp.index, s))
    line_diags: dict[int, list] = {}
    for d in job.diagnostics:
        if d.line is not None:
            line_diags.setdefault(d.line, []).append(d)
    events: list[tuple[int, str]] = []
    for d in script.directives:
        sets = by_line.get(d.line, [])
        if sets:
            parts = []
            for comp_index, s in sets:
                shown = s.value if s.value not in ("", s.name, "set") else ""
                what = f"--{s.name}" + (f"={shown}" if shown else "")
                summary = CANONICAL[s.name].summary if s.name in CANONICAL else "plugin option"
                het = f" [component {comp_index}]" if len(job.components) > 1 else ""
                parts.append(f"{what} ({summary}){het}")
            desc = "sets " + "; ".join(parts)
        elif any(x.severity == "error" for x in line_diags.get(d.line, [])):
            desc = "rejected (see diagnostics)"
        else:
            desc = "continues the option of an earlier line" if d.words else "empty directive"
        events.append((d.line, f"  {d.line:>4} | {d.text}\n       -> {desc}"))
    for ig in script.ignored:
        events.append(
            (ig.line, f"  {ig.line:>4} | {ig.text}\n       -> ignored by sbatch: {ig.explanation} [{ig.reason}]")
        )
    for fd in script.foreign:
        sets = by_line.get(fd.line, [])
        if sets:
            desc = "translated by sbatch to " + "; ".join(
                f"--{s.name}" + (f"={s.value}" if s.value not in ("", s.name, "set") else "") for _, s in sets
            )
        else:
            codes = sorted({d.code for d in line_diags.get(fd.line, []) if d.code.startswith("O")})
            desc = f"#{fd.family} line not applied by sbatch" + (f" (see {', '.join(codes)})" if codes else "")
        events.append((fd.line, f"  {fd.line:>4} | {fd.text}\n       -> {desc}"))
    inline: dict[int, list[str]] = {}
    for d in job.diagnostics:
        if d.line is not None and d.severity in ("error", "warning") and not d.code.startswith("R12"):
            inline.setdefault(d.line, []).append(f"       !! {d.severity} {d.code} {d.message}")
    events = [(ln, text + "".join("\n" + x for x in inline.pop(ln, []))) for ln, text in events]
    events.sort(key=lambda e: e[0])
    out.append("Directives:")
    if events:
        out.extend(text for _, text in events)
    else:
        out.append("  (no #SBATCH directives)")
    outside = [s for c in job.components for s in c.settings if s.source != "directive"]
    if outside:
        out.append("Set outside the script (command line > environment > #SBATCH):")
        for s in outside:
            out.append(
                f"  {_SOURCE_LABEL.get(s.source, s.source)}: {s.written} -> --{s.name}"
                + (f"={s.value}" if s.value else "")
            )
    if job.diagnostics:
        out.append("Diagnostics:")
        for d in job.diagnostics:
            out.append("  " + d.format(script.path))
    for comp in job.components:
        title = "Resolved job" if len(job.components) == 1 else f"Resolved job, component {comp.index}"
        out.append(f"{title}:")
        f = comp.fields
        rows = [
            ("job name", f.job_name),
            ("partition", f.partition),
            ("account", f.account),
            ("qos", f.qos),
            (
                "nodes",
                None
                if f.nodes_min is None
                else (str(f.nodes_min) if f.nodes_min == f.nodes_max else f"{f.nodes_min}-{f.nodes_max}"),
            ),
            ("tasks", f.ntasks),
            ("tasks per node", f.ntasks_per_node),
            ("cpus per task", f.cpus_per_task),
            ("gpus per node", f.gpus_per_node),
            ("gpus per task", f.gpus_per_task),
            ("gpus (whole job)", f.gpus_total),
            ("gpu type", f.gpu_type),
            ("memory per node", _mib(f.mem_per_node_mb) if f.mem_per_node_mb is not None else None),
            ("memory per cpu", _mib(f.mem_per_cpu_mb) if f.mem_per_cpu_mb is not None else None),
            ("memory per gpu", _mib(f.mem_per_gpu_mb) if f.mem_per_gpu_mb is not None else None),
            ("time limit", _seconds(f.time_limit_seconds) if f.time_limit_seconds is not None else None),
            (
                "array",
                None
                if f.array is None
                else (f.array + (f" (at most {f.array_throttle} at once)" if f.array_throttle is not None else "")),
            ),
            ("dependency", f.dependency),
            ("exclusive", f.exclusive),
            ("constraint", f.constraint),
            ("output", f.output),
            ("error", f.error),
            ("chdir", f.chdir),
            ("requeue", f.requeue),
            ("signal", f.signal),
            ("export", f.export),
            ("comment", f.comment),
        ]
        for label, value in rows:
            if value is None and label != "job name":
                continue
            out.append(f"  {label + ':':<18} {_fmt_value(value)}")
        extra = {k: v for k, v in comp.options.items() if k not in _SHOWN_OPTIONS}
        if extra:
            out.append("  other options:     " + " ".join(f"--{k}" + (f"={v}" if v else "") for k, v in extra.items()))
    return "\n".join(out)


_SHOWN_OPTIONS = {
    "job-name",
    "partition",
    "account",
    "qos",
    "nodes",
    "ntasks",
    "ntasks-per-node",
    "cpus-per-task",
    "gpus-per-node",
    "gpus-per-task",
    "gpus",
    "gres",
    "mem",
    "mem-per-cpu",
    "mem-per-gpu",
    "time",
    "array",
    "dependency",
    "exclusive",
    "constraint",
    "output",
    "error",
    "chdir",
    "requeue",
    "no-requeue",
    "signal",
    "export",
    "comment",
}
