"""``npkit asm`` and ``npkit disasm``: microcode to ME images and back."""

from __future__ import annotations

from pathlib import Path

import click

from npkit.base.portspec import check_writable
from npkit.compiler.uc import Image, assemble_file, disassemble
from npkit.compiler.uc import listing as make_listing

from .app import writable


@click.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), callback=writable,
              help="image file to write (default: SOURCE with .img)")
@click.option("-I", "include_dirs", multiple=True, type=click.Path(path_type=Path),
              help="folder to search for #include files (repeatable)")
@click.option("--listing", type=click.Path(path_type=Path), callback=writable,
              help="also write an address/word/source listing here")
def asm(source: Path, output: Path | None, include_dirs: tuple[Path, ...],
        listing: Path | None) -> None:
    """Assemble microcode SOURCE (.uc) into an ME image."""
    if not source.is_file():
        raise click.ClickException(f"{source}: no such microcode file")
    target = output or source.with_suffix(".img")
    if output is None:
        check_writable(target, "the image")
    dirs = tuple(str(d) for d in include_dirs) or (str(source.parent),)
    image = assemble_file(str(source), include_dirs=dirs)
    image.save(target)
    if listing is not None:
        listing.write_text(make_listing(image), encoding="utf-8")
    mes = ", ".join(str(m) for m in image.mes)
    click.echo(f"{target}: {len(image.words)} instructions for ME {mes}, "
               f"{image.ctx_mode} contexts")


@click.command()
@click.argument("image_file", type=click.Path(path_type=Path))
def disasm(image_file: Path) -> None:
    """Disassemble an ME image (.img) to microcode text."""
    click.echo(disassemble(Image.load(image_file)), nl=False)
