"""The ``npkit`` command: the top layer, the only place click is imported.

One module a command (or group); the work is in the library below.  ``app.main`` is the
group; its ``invoke`` is the one place user errors (``NpkitError``) become a message and
exit status 1 (docs/cli.md).

    npkit run [X.mbl | MANIFEST.toml | IMAGE.uc|.img ...]    run.py (no arguments: the showcase)
    npkit asm / disasm                                        asm.py
    npkit check / build / graph X.mbl                         mbl.py
    npkit demo                                                demo.py (the l2wire wire)
    npkit router / routes / bench                             router.py, routes.py, bench.py
    npkit debug X.mbl|MANIFEST.toml                           debug.py (the debugger's REPL)
"""

from __future__ import annotations

from .app import main
from .asm import asm, disasm
from .bench import bench
from .debug import debug
from .demo import demo
from .mbl import build, check, graph
from .router import router
from .routes import routes
from .run import run

for _command in (asm, disasm, run, demo, check, build, graph, routes, router, bench, debug):
    main.add_command(_command)

__all__ = ["main"]
