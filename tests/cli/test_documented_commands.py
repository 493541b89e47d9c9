"""Every command in a ```sh block of README.md and docs/cli.md works as written.

The commands run one by one, in the order the documents give them (README first), with
bash, in ONE temporary copy of the checkout (the files git tracks or would track, so
nothing a build or an earlier run left behind): relative paths such as
``examples/router/router.mbl`` resolve as on a fresh clone, and every output lands in the
copy.  A later command may use an earlier one's output, as a reader following the
document would.

What this test takes as done instead of running:
- ``bash scripts/setup``: the test run itself needs the set-up checkout (its venv is on the
  PATH, so ``npkit`` and ``.venv/bin/npkit`` are the installed command);
- ``source .venv/bin/activate``: the same PATH;
- ``bash scripts/test``: the whole suite, which runs this test.
A command's failure shows the command, its exit status and its output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", "docs/cli.md")
SETUP = "bash scripts/setup"
NOT_RUN = ("bash scripts/test", "source .venv/bin/activate")
SLOW_PREFIXES = ("npkit bench ",)  # minutes each: marked slow (CI runs slow tests too)
TIMEOUT_S = 1800


def sh_commands(text: str) -> list[str]:
    """The commands of every ```sh block: one per line, backslash continuations joined,
    blank lines and whole-line comments left out."""
    commands: list[str] = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M):
        pending = ""
        for line in block.splitlines():
            if line.rstrip().endswith("\\"):
                pending += line.strip()[:-1].rstrip() + " "
                continue
            command = (pending + line.strip()).strip()
            pending = ""
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def runnable(command: str) -> str | None:
    """The command as the test runs it (set-up taken as done), or None to leave it out."""
    if command.startswith(f"{SETUP} && "):
        command = command.removeprefix(f"{SETUP} && ")
    if command == SETUP or command.startswith(NOT_RUN):
        return None
    return command


def _cases() -> list[pytest.param]:
    cases = []
    for document in DOCUMENTS:
        for number, command in enumerate(sh_commands((ROOT / document).read_text()), 1):
            run = runnable(command)
            if run is None:
                continue
            marks = [pytest.mark.slow] if run.startswith(SLOW_PREFIXES) else []
            label = run.split("  #")[0].strip()[:60]
            cases.append(pytest.param(run, id=f"{document}:{number}:{label}", marks=marks))
    return cases


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout as a fresh clone has it, with the venv linked in."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True, check=True)
    copy = tmp_path_factory.mktemp("checkout")
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    (copy / ".venv").symlink_to(Path(sys.executable).parents[1])
    return copy


@pytest.mark.parametrize("command", _cases())
def test_documented_command(command: str, checkout: Path) -> None:
    env = dict(os.environ, PATH=f"{checkout / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
               COLUMNS="120")
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=checkout,
                          env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (f"`{command}` exited with {done.returncode}\n"
                                  f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")


def test_the_documents_have_commands() -> None:
    """The extraction sees the documented commands (an empty list would pass vacuously)."""
    readme = sh_commands((ROOT / "README.md").read_text())
    assert readme[0] == f"{SETUP} && .venv/bin/npkit run"
    assert any(c.startswith("npkit run examples/router/router.mbl --target native") for c in
               readme)
    assert sh_commands((ROOT / "docs" / "cli.md").read_text())
    assert sh_commands("```sh\nnpkit a \\\n   --b c  # note\n# skip\n\n```\n") == \
        ["npkit a --b c  # note"]
