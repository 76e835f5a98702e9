"""The #SBATCH header scan (opt.c _opt_batch_script), look-alike lines, #PBS/#BSUB, hetjob components.

Expectations come from sbatch-semantics.md sections 1, 4 and 15 and from the oracle's verdicts
(sample 14: directives after the first command are ignored)."""

from __future__ import annotations

from translator.read import read_script


def read(text: str, name="job.sbatch"):
    return read_script(text.encode(), name)


def codes_at(script, line):
    return sorted(d.code for d in script.diagnostics if d.line == line)


def test_directives_with_line_numbers_and_raw_text():
    s = read("#!/bin/bash\n#SBATCH -N 2 -n8\n\n# comment\n#SBATCH --nodes 2\nsrun hostname\n")
    assert [(d.line, d.words, d.prefix) for d in s.directives] == [
        (2, ("-N", "2", "-n8"), "#SBATCH"),
        (5, ("--nodes", "2"), "#SBATCH"),
    ]
    assert s.directives[0].text == "#SBATCH -N 2 -n8"
    assert s.body_start_line == 6
    assert s.shebang == "#!/bin/bash" and s.shell == "bash"
    assert s.components == 1 and not s.sbatch_refuses and s.line_count == 6


def test_scan_continues_over_blank_comment_shebang_like_and_pbs_lines():
    text = "#!/bin/bash\n\n   \n\t# indented comment\n#!/not/a/shebang\n#PBS -N x\n#SBATCH -t 10\nmodule load x\n"
    s = read(text)
    assert [d.line for d in s.directives] == [7]
    assert s.body_start_line == 8


def test_scan_stops_at_the_first_command_even_a_colon():
    for first in ("set -e", "echo hi", "module load cuda", ":", "  x=1", "f() { :; }"):
        s = read(f"#!/bin/bash\n#SBATCH -N 1\n{first}\n#SBATCH -N 8 -t 10\n")
        assert [d.words for d in s.directives] == [("-N", "1")], first
        assert s.body_start_line == 3
        [ign] = s.ignored
        assert ign.line == 4 and ign.reason == "R120"
        assert "line 3" in ign.explanation  # names the first command's line
        assert codes_at(s, 4) == ["R120"]


def test_no_blank_needed_and_case_sensitive_column_zero():
    s = read("#!/bin/bash\n#SBATCH--nodes=2\n#SBATCHhetjob\n#SBATCH -t 5\nsrun x\n")
    assert [(d.line, d.words, d.component) for d in s.directives] == [(2, ("--nodes=2",), 0), (4, ("-t", "5"), 1)]
    assert s.components == 2 and s.hetjob_separator_lines == (3,)


def test_lookalikes_each_have_a_code_and_a_warning_with_the_line():
    text = (
        "#!/bin/bash\n"
        "# SBATCH -N 3\n"  # 2 R121
        "##SBATCH -N 4\n"  # 3 R122
        "  #SBATCH -N 5\n"  # 4 R123
        "#sbatch -N 6\n"  # 5 R124
        "#SBATCh -N 6\n"  # 6 R124
        "#SBTACH -N 7\n"  # 7 R125
        "#SBACTH --time=1\n"  # 8 R125
        "#SABTCH -N 1\n"  # 9 R125
        "#!SBATCH -N 8\n"  # 10 R126
        "#\tSBATCH -N 9\n"  # 11 R121
        "#SBATCH -N 1\n"
        "srun x\n"
    )
    s = read(text)
    assert [(i.line, i.reason) for i in s.ignored] == [
        (2, "R121"),
        (3, "R122"),
        (4, "R123"),
        (5, "R124"),
        (6, "R124"),
        (7, "R125"),
        (8, "R125"),
        (9, "R125"),
        (10, "R126"),
        (11, "R121"),
    ]
    for ign in s.ignored:
        assert codes_at(s, ign.line) == [ign.reason]
        assert ign.explanation
    assert [d.words for d in s.directives] == [("-N", "1")]


def test_ordinary_comments_are_not_lookalikes():
    s = read(
        "#!/bin/bash\n# Submit with sbatch job.sh\n# batch size -N\n# SEARCH the logs\n# sbatchfile\n#SBATCH -N 1\nx\n"
    )
    assert s.ignored == ()
    assert [d.code for d in s.diagnostics] == []
    # a near miss followed by an option is a misspelt directive, whatever the spacing
    s = read("#!/bin/bash\n# BATCH -x\n#SBATCH -N 1\nx\n")
    assert [(i.line, i.reason) for i in s.ignored] == [(2, "R125")]


def test_slurm_prefix_is_applied_with_a_warning():
    s = read("#!/bin/bash\n#SLURM -N 3\nsrun x\n")
    assert [(d.prefix, d.words) for d in s.directives] == [("#SLURM", ("-N", "3"))]
    assert codes_at(s, 2) == ["R127"] and not s.sbatch_refuses


def test_pbs_and_bsub_are_foreign_directives():
    s = read("#!/bin/bash\n#SBATCH -t 10\n#PBS -l walltime=1:00:00\necho x\n#PBS -N late\n")
    assert [(f.line, f.family) for f in s.foreign] == [(3, "PBS"), (5, "PBS")]  # not limited to the header
    assert s.diagnostics == ()  # the applied family is translated and reported by the resolve stage (O220)
    s = read("#!/bin/bash\n#BSUB -n 4\n#PBS -N x\nhostname\n")
    assert [(f.line, f.family) for f in s.foreign] == [(2, "BSUB"), (3, "PBS")]
    assert [(d.code, d.line, d.severity) for d in s.diagnostics] == [("R128", 3, "info")]  # BSUB is tried first


def test_pbs_scan_gives_up_after_100_non_comment_lines():
    s = read("#!/bin/bash\n" + "echo x\n" * 100 + "#PBS -N counted\n" + "echo y\n" + "#PBS -N late\n")
    assert [f.line for f in s.foreign] == [102]
    assert [(d.code, d.line) for d in s.diagnostics] == [("R128", 104)]


def test_hetjob_components_and_separator_lines():
    s = read("#!/bin/bash\n#SBATCH -N 2\n#SBATCH hetjob\n#SBATCH -N 3\n#SBATCH packjob\n#SBATCH -N 4\nsrun x\n")
    assert [(d.line, d.component) for d in s.directives] == [(2, 0), (4, 1), (6, 2)]
    assert s.components == 3 and s.hetjob_separator_lines == (3, 5)
    assert "R135" in codes_at(s, 3)


def test_heredoc_directives_after_the_first_command_are_reported_as_generated_text():
    s = read("#!/bin/bash\n#SBATCH -N 1\ncat > gen.sh <<EOF\n#!/bin/bash\n#SBATCH -N 4\nsrun x\nEOF\n#SBATCH -N 9\n")
    assert [(i.line, i.reason) for i in s.ignored] == [(5, "R129"), (8, "R120")]


def test_directive_line_keeps_template_placeholders():
    s = read("#!/bin/bash\n#SBATCH --nodes={{nodes}}\n#SBATCH -A <netid>\nsrun x\n")
    assert [d.words for d in s.directives] == [("--nodes={{nodes}}",), ("-A", "<netid>")]


def test_csh_script_header_is_read_the_same_way():
    s = read("#!/bin/csh\n#SBATCH -N 2\n#SBATCH -t 5\nsetenv OMP_NUM_THREADS 4\nsrun ./a.out\n")
    assert s.shell == "csh"
    assert [d.words for d in s.directives] == [("-N", "2"), ("-t", "5")]
    assert s.body_start_line == 4
    assert any(d.code == "R144" for d in s.diagnostics)


def test_non_shell_interpreter_header_is_read_body_is_not_parsed():
    s = read("#!/usr/bin/env python3\n#SBATCH -N 2\nimport os\nos.system('srun x')\n")
    assert [d.words for d in s.directives] == [("-N", "2")] and s.body_start_line == 3
    assert s.body == () and [d.code for d in s.diagnostics] == ["R150"]


def test_prose_mentioning_sbatch_is_not_a_lookalike():
    s = read("#!/bin/bash\n# sbatch train.sh\n# Sbatch file for the run\n#SBATCH -N 1\nx\n")
    assert s.ignored == () and s.diagnostics == ()


def test_lookalikes_after_the_first_command_are_reported_as_after_the_command():
    s = read("#!/bin/bash\n#SBATCH -N 1\necho go\n#SBTACH -N 2\n  #SBATCH -N 3\n# plain comment\n")
    assert [(i.line, i.reason) for i in s.ignored] == [(4, "R120"), (5, "R120")]
    assert "misspelt" in s.ignored[0].explanation and "indented" in s.ignored[1].explanation


def test_non_ascii_blank_before_a_comment_makes_it_the_first_command():
    # checked with Slurm 22.05: the #SBATCH line after it is not applied
    s = read_script("#!/bin/bash\n\u00a0#SBATCH --comment=nbsp\n#SBATCH --comment=after\nhostname\n".encode(), "j")
    assert s.directives == () and s.body_start_line == 2
    assert [(d.code, d.line) for d in s.diagnostics] == [("R137", 2), ("R120", 3)]
    # C isspace() blanks (vertical tab, form feed) are blanks for sbatch
    s = read_script(b"#!/bin/bash\n\v\f\n#SBATCH --comment=vt-ok\nhostname\n", "j")
    assert [d.words for d in s.directives] == [("--comment=vt-ok",)]


def test_shell_from_the_shebang():
    for line, shell in [
        ("#!/bin/bash", "bash"),
        ("#!/bin/bash -l", "bash"),
        ("#!/usr/bin/env bash", "bash"),
        ("#!/usr/bin/env -S bash -l", "bash"),
        ("#! /bin/sh", "sh"),
        ("#!/bin/tcsh -f", "tcsh"),
        ("#!/bin/zsh", "zsh"),
        ("#!/usr/bin/env python3", "unknown"),
        ("#!", "unknown"),
    ]:
        assert read(line + "\n#SBATCH -N 1\nx\n").shell == shell, line
