"""``python -m butler.cli``: the same command line as the ``butler`` script."""

from butler.cli import main

main()
