"""The JSON report (for dashboards, and what `slurm2kf report OUT` reads back).

Streamed: the scripts are written one by one, so a report of 10,000 scripts never sits in memory.
"""

from __future__ import annotations

import json
from typing import IO

from translator.report.model import (
    REPORT_FORMAT_VERSION,
    Report,
    ScriptReport,
    SkippedFile,
    prerendered,
)

FORMAT_NAME = "slurm2kf-report"


def write(report: Report, out: IO[str]) -> None:
    """The report as JSON text into `out`. A sink with a `write_bytes(bytes)` method (migrate's hashing
    writer) gets the spooled records as the UTF-8 bytes they are stored as: the same content, without
    decoding and encoding a few hundred MB again."""
    head = {
        "format": FORMAT_NAME,
        "version": REPORT_FORMAT_VERSION,
        "title": report.title,
        "source": report.source,
        "summary": report.summary.to_json(),
        "skipped": [f.to_json() for f in report.skipped],
    }
    if report.extra:
        head["migrate"] = report.extra
    text = json.dumps(head, indent=1, sort_keys=False, ensure_ascii=False)
    out.write(text[:-2])  # drop the closing "\n}"
    out.write(',\n "scripts": [')
    first = True
    spool = prerendered(report, "json")
    put = getattr(out, "write_bytes", None)
    if spool is not None and put is not None:  # a sink that takes UTF-8: the spooled bytes, copied as they are
        for data in spool.raw_bytes("json"):
            put(b"\n  " if first else b",\n  ")
            put(data)
            first = False
    else:
        texts = (t for _p, t in spool.raw("json")) if spool is not None else (record_text(s) for s in report.scripts)
        for text in texts:
            out.write("\n  " if first else ",\n  ")
            out.write(text)
            first = False
    out.write("\n ]\n}\n")


def record_text(s: ScriptReport) -> str:
    """One script's record as it appears in the report (also what migrate workers pre-render)."""
    return s.record_json()


def render(report: Report) -> str:
    import io

    buf = io.StringIO()
    write(report, buf)
    return buf.getvalue()


class ReportFormatError(ValueError):
    pass


MAX_REPORT_BYTES = 1 << 30  # a saved report larger than this is refused (a 100,000-script report is ~300 MB)


def load(path: str, data: bytes | None = None) -> Report:
    """Read a JSON report back into a Report (summary recomputed from the scripts, not trusted).
    The file is read with the shared guard (regular file only, size cap): `data` when already read."""
    if data is None:
        from translator.fsio import UserFileError, read_user_file

        try:
            data = read_user_file(path, MAX_REPORT_BYTES)
        except UserFileError as exc:
            raise ReportFormatError(exc.message) from None
    try:
        data = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ReportFormatError(f"{path}: not a JSON report (not UTF-8 at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ReportFormatError(f"{path}: not a JSON report ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:  # `[[[[…` nested deeper than the decoder goes: damaged, like any bad JSON (M614)
        raise ReportFormatError(f"{path}: not a JSON report (nested too deeply)") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise ReportFormatError(f'{path}: not a slurm2kf report (no "format": "{FORMAT_NAME}")')
    try:
        scripts = [ScriptReport.from_json(d) for d in data.get("scripts", [])]
        skipped = [SkippedFile.from_json(d) for d in data.get("skipped", [])]
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportFormatError(f"{path}: malformed script record ({exc})") from None
    rep = Report.from_scripts(str(data.get("title", "slurm2kf review")), str(data.get("source", "")), scripts, skipped)
    if isinstance(data.get("migrate"), dict):
        rep.extra = data["migrate"]
    return rep
