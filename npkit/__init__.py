"""npkit: an open toolkit for IXP-style network processors.

Subpackages: ``npkit.sim`` (the simulated chip), ``npkit.compiler`` (MBL compiler and the
microcode assembler), ``npkit.runtime`` (loader, control plane), ``npkit.bench``.  The
``npkit`` command lives in ``npkit.cli``.
"""

__version__ = "0.1.0"
