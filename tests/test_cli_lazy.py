"""The lazily loaded command group (translator/cli/__init__.py): every command registered and loadable,
`--help` lists them all with their short help, and running one command imports only that command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from translator import cli as cli_pkg

CLI_DIR = Path(cli_pkg.__file__).parent


def test_every_command_module_is_registered():
    # each translator/cli/<name>_cmd.py is one command; none may be forgotten in the table
    modules = sorted(p.stem for p in CLI_DIR.glob("*_cmd.py"))
    assert sorted(cli_pkg.COMMANDS.values()) == modules
    assert sorted(cli_pkg.COMMANDS) == sorted(m[: -len("_cmd")] for m in modules)


def test_every_command_loads_under_its_name():
    ctx = click.Context(cli_pkg.cli)
    assert cli_pkg.cli.list_commands(ctx) == sorted(cli_pkg.COMMANDS)
    for name in cli_pkg.COMMANDS:
        command = cli_pkg.cli.get_command(ctx, name)
        assert isinstance(command, click.Command), name
        assert command.name == name


def test_unknown_command_is_a_usage_error():
    result = CliRunner().invoke(cli_pkg.cli, ["no-such-command"])
    assert result.exit_code == 2
    assert "No such command 'no-such-command'" in result.output


def test_help_lists_every_command_with_its_short_help():
    result = CliRunner().invoke(cli_pkg.cli, ["--help"])
    assert result.exit_code == 0
    commands_section = result.output.split("Commands:", 1)[1]
    listed = {}
    for line in commands_section.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            listed[parts[0]] = parts[1]
    assert sorted(listed) == sorted(cli_pkg.COMMANDS)
    ctx = click.Context(cli_pkg.cli)
    for name, shown in listed.items():
        help_text = cli_pkg.cli.get_command(ctx, name).get_short_help_str(limit=1000)
        # click shortens the first sentence to fit 80 columns: what is shown is a prefix of it
        assert help_text.startswith(shown.rstrip(".").rstrip()), (name, shown, help_text)


def test_running_one_command_imports_no_other_command(tmp_path):
    script = tmp_path / "job.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --nodes=2\nsrun python train.py\n")
    probe = (
        "import sys\n"
        "from translator.cli import cli\n"
        "try:\n"
        "    cli.main(['inspect', sys.argv[1]], standalone_mode=False)\n"
        "finally:\n"
        "    loaded = sorted(m for m in sys.modules if m.startswith('translator.cli.') and m.endswith('_cmd'))\n"
        "    print('LOADED', ' '.join(loaded), file=sys.stderr)\n"
    )
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stderr.split("LOADED", 1)[1].split()
    assert loaded == ["translator.cli.inspect_cmd"]
