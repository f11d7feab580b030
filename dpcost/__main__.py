"""`python -m dpcost` is the `dpcost` command."""

from dpcost.cli import main

main()
