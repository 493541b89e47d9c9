"""``python -m npkit``: the npkit command."""

from npkit.cli import main

main()
