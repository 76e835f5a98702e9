"""Review reports: a `Report` (translator/report/model.py) written in a report format.

`REPORT_WRITERS` is the one table of report formats; the commands read it and never name a format:

* `report --format NAME` offers every entry; without `--format`, the `-o` file's extension picks the
  entry that lists it in `extensions` (else the first entry);
* `migrate` writes every entry into OUT as `slurm2kf-report.<first extension>`.

A format is one module with `write(report, out)` (`out` a text stream; stream the scripts one by one,
a report may hold 100,000 of them) plus one entry here. See docs/architecture.md, "Adding a report
format".
"""

from __future__ import annotations

import importlib
from typing import NamedTuple


class ReportWriter(NamedTuple):
    """One report format."""

    name: str  # the `report --format` value
    module: str  # dotted module name; its `write(report, out: IO[str])` writes the report
    media_type: str
    extensions: tuple[str, ...]  # `-o` extensions that choose it; the first names migrate's file

    def load(self):
        """The writer's write function (its module is imported on first use only)."""
        return importlib.import_module(self.module).write

    @property
    def extension(self) -> str:
        return self.extensions[0]


# Ordered: the first entry is the default of `report` when the output's extension says nothing.
REPORT_WRITERS: dict[str, ReportWriter] = {
    w.name: w
    for w in (
        ReportWriter("md", "translator.report.markdown", "text/markdown", ("md", "markdown")),
        ReportWriter("html", "translator.report.html", "text/html", ("html", "htm")),
        ReportWriter("json", "translator.report.json_report", "application/json", ("json",)),
    )
}


def report_writer(name: str) -> ReportWriter:
    try:
        return REPORT_WRITERS[name]
    except KeyError:
        raise ValueError(f"unknown report format {name!r} (choose from {', '.join(REPORT_WRITERS)})") from None


def for_extension(ext: str) -> ReportWriter | None:
    """The format a file extension (without the dot, any case) chooses, or None."""
    ext = ext.lower()
    return next((w for w in REPORT_WRITERS.values() if ext in w.extensions), None)
