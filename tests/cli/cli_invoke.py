"""Run `npkit` in-process for the CLI tests: exit code and output, never a traceback."""

from __future__ import annotations

from click.testing import CliRunner

from npkit.cli import main


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        result.exception
    assert "Traceback" not in result.output
    # a user's mistake is an NpkitError, reported as such: never disguised as a bug
    assert "internal error" not in result.output, result.output
    return result.exit_code, result.output
