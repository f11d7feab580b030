#!/usr/bin/env python3
"""Start-up of `dpcost` commands as CI loops run them, as ratios to a floor (a benchmark, not a test).

    python benchmarks/startup.py [--runs 15] [--markdown]

The floor is the least a CLI on dpcost's run-time stack can cost: a minimal app that imports typer, pydantic,
rich and yaml, defines one command and one pydantic model, loads a small YAML file and prints a 3-row rich table.
This script writes it to a temporary folder. Each round runs the floor and every command once, in turn
(interleaved, so that the machine's drift hits them alike); the ratio of each command's median to the floor's
median is printed. Then `python -X importtime` names the heaviest imports of the JSON path.

The commands run as an installed copy does: dpcost's modules compiled to bytecode first (`pip install` compiles
them), and the runs free to use and write bytecode even where PYTHONDONTWRITEBYTECODE is set, since otherwise every
run would compile each module edited since its last cached compile and time that instead.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "estimate --format json": ["estimate", "--model", "llama-70b", "--dp", "512", "--format", "json"],
    "estimate (table)": ["estimate", "--model", "llama-70b", "--dp", "512"],
    "check examples/capacity-plan.yaml": ["check", "examples/capacity-plan.yaml"],
    "sweep --dp 8..4096": ["sweep", "--model", "llama-70b", "--dp", "8..4096"],
    "plan llama-8b on 64 GPUs": ["plan", "--model", "llama-8b", "--gpus", "64", "--global-batch", "512"],
}

FLOOR = """
import typer, yaml
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

app = typer.Typer()


class Spec(BaseModel):
    name: str
    hidden: int
    layers: int


@app.command()
def show(path: str) -> None:
    spec = Spec.model_validate(yaml.safe_load(open(path)))
    table = Table("key", "value")
    for key in ("name", "hidden", "layers"):
        table.add_row(key, str(getattr(spec, key)))
    Console().print(table)


if __name__ == "__main__":
    app()
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args()
    dpcost = shutil.which("dpcost")
    if dpcost is None:
        sys.exit("dpcost is not on PATH: install it first (see README.md)")
    root = Path(__file__).resolve().parents[1]
    env = _installed_env()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "dpcost")], env=env, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        floor, spec = Path(tmp) / "floor.py", Path(tmp) / "spec.yaml"
        floor.write_text(FLOOR)
        spec.write_text("name: tiny\nhidden: 4096\nlayers: 32\n")
        runs = {"floor": [sys.executable, str(floor), str(spec)]}
        runs |= {name: [dpcost, *argv] for name, argv in COMMANDS.items()}
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.runs):
            for name, cmd in runs.items():
                start = time.perf_counter()
                subprocess.run(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                times[name].append(time.perf_counter() - start)
    base = statistics.median(times["floor"])
    if args.markdown:
        print("| command | median | / floor |")
        print("|---|---:|---:|")
    for name, seen in times.items():
        median = statistics.median(seen)
        if args.markdown:
            print(f"| {name} | {median * 1e3:.0f} ms | {median / base:.2f}x |")
        else:
            print(f"{median * 1e3:7.0f} ms median  {median / base:5.2f}x the floor   {name}")
    if not args.markdown:
        _heaviest_imports()
    return 0


def _installed_env() -> dict[str, str]:
    """The environment with bytecode caching allowed (module docstring)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _heaviest_imports() -> None:
    imports = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            "from dpcost.cli import main; import sys; "
            "sys.argv = ['dpcost', 'estimate', '--model', 'llama-70b', '--dp', '512', '--format', 'json']; main()",
        ],
        capture_output=True,
        text=True,
        env=_installed_env(),
    )
    rows = []
    for line in imports.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    top = [r for r in rows if not r[1].startswith("   ")]  # top-level imports only
    print("heaviest top-level imports (cumulative):")
    for us, name in sorted(top, reverse=True)[:8]:
        print(f"  {us / 1e3:7.1f} ms  {name.strip()}")


if __name__ == "__main__":
    sys.exit(main())
