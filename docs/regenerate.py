#!/usr/bin/env python3
"""Fill every generated block of docs/*.md from the command it names, so that the docs say what the code does.

    python docs/regenerate.py          # rewrite the blocks
    python docs/regenerate.py --check  # exit 1 if any block is stale (tests/test_docs.py runs this)

A block is the text between `<!-- generated: dpcost ARGS -->` and `<!-- end generated -->`; it is replaced by
what `dpcost ARGS` prints. `<!-- generated: advice codes -->` is the table of warning codes (engine/advice.py).
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
BLOCK = re.compile(r"(<!-- generated: (?P<what>.+?) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


def produce(what: str) -> str:
    if what == "advice codes":
        from dpcost.engine.advice import CODES

        return "| code | when |\n|---|---|\n" + "".join(f"| `{c}` | {w} |\n" for c, w in CODES.items())
    args = shlex.split(what)
    if args[0] != "dpcost":
        raise SystemExit(f"unknown generator {what!r}")
    from typer.testing import CliRunner

    from dpcost.cli import app

    result = CliRunner().invoke(app, args[1:])
    if result.exit_code != 0:
        raise SystemExit(f"{what}: exit {result.exit_code}: {result.output}")
    return result.stdout


def refresh(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + produce(m.group("what")) + m.group(4), text)


def main(argv: list[str]) -> int:
    stale = []
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text()
        fresh = refresh(text)
        if fresh != text:
            stale.append(path.name)
            if "--check" not in argv:
                path.write_text(fresh)
    if stale and "--check" in argv:
        print(f"stale generated blocks in {', '.join(stale)}: run python docs/regenerate.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
