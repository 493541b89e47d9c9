"""npkit microcode tools: assembler, disassembler, ME image format and listing.

See docs/assembler.md for the syntax, the image file format and the error kinds.
"""

from .assembler import CONTROL_STORE_WORDS, assemble_file, assemble_text
from .disassembler import disassemble, listing
from .errors import AsmError, Diagnostic, ImageError, SourceLoc
from .image import Image

__all__ = [
    "CONTROL_STORE_WORDS", "AsmError", "Diagnostic", "Image", "ImageError", "SourceLoc",
    "assemble_file", "assemble_text", "disassemble", "listing",
]
