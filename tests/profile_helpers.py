"""Hand-built scripts, jobs and plans for the profile tests (independent of the reader and planner)."""
from __future__ import annotations

from translator.plan.model import TrainerPlan
from translator.read.ast import Assignment, Command, Directive, Script, Word
from translator.slurm.job import JobComponent, JobFields, OptionSetting, SlurmJob


def word(text: str) -> Word:
    return Word(raw=text, value=text, literal="$" not in text)


def cmd(line: int, kind: str, *words: str) -> Command:
    return Command(line=line, end_line=line, text=" ".join(words), words=tuple(word(w) for w in words), kind=kind)


def assign(line: int, name: str, value: str, exported: bool = True) -> Assignment:
    return Assignment(line=line, name=name, value=word(value), exported=exported)


def script(*body, path: str = "job.sbatch") -> Script:
    return Script(path=path, text="", line_count=100, shebang="#!/bin/bash", shell="bash", directives=(),
                  ignored=(), foreign=(), body=tuple(body), body_start_line=10, components=1)


def job(lines: dict = None, path: str = "job.sbatch", **fields) -> SlurmJob:
    """`lines` maps option long names to the directive line that set them."""
    settings = tuple(OptionSetting(name, "", "directive", line, f"--{name}") for name, line in (lines or {}).items())
    comp = JobComponent(index=0, options={}, settings=settings, fields=JobFields(**fields))
    return SlurmJob(path=path, components=(comp,), diagnostics=(), sbatch_accepts=True)


def plan(**kw) -> TrainerPlan:
    base = dict(name="job", source_path="job.sbatch", job_name="job")
    base.update(kw)
    return TrainerPlan(**base)
