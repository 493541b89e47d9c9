"""The ME backend's user-facing error types (besides CompileError, which carries MBL source
locations): the CLI turns each into one message."""

from __future__ import annotations


def backend_error_types() -> tuple[type[BaseException], ...]:
    from ..uc import AsmError
    from .front import FrontError
    from .graph import GraphError
    from .link import LinkError
    from .report import ReportError

    return (FrontError, LinkError, GraphError, ReportError, AsmError)
