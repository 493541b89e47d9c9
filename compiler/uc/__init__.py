"""npkit microcode tools: assembler, disassembler, ME image format and listing.

See docs/assembler.md for the syntax, the image file format and the error kinds.
"""

from npkit.base.diagnostics import Diagnostic, SourceLocation

from .assembler import CONTROL_STORE_WORDS, assemble_file, assemble_text
from .disassembler import disassemble, listing
from .errors import AsmError, ImageError
from .image import Image

__all__ = [
    "CONTROL_STORE_WORDS", "AsmError", "Diagnostic", "Image", "ImageError", "SourceLocation",
    "assemble_file", "assemble_text", "disassemble", "listing",
]
