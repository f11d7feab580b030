#!/usr/bin/env python3
"""Wall time of `dpcost` invocations as CI loops run them (a benchmark, not a test: machines differ).

    python benchmarks/startup.py [--runs 10]

Prints the best and the median of N runs for each command, and what `python -X importtime` says the heaviest
imports are for the JSON path. Start-up is most of it: the engine itself takes milliseconds.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time

COMMANDS = [
    ["dpcost", "estimate", "--model", "llama-70b", "--dp", "512", "--format", "json"],
    ["dpcost", "estimate", "--model", "llama-70b", "--dp", "512"],
    ["dpcost", "estimate", "--model", "deepseek-v3", "--dp", "512", "--format", "json"],
    ["dpcost", "collective", "--ranks", "16", "--format", "csv"],
    ["dpcost", "sweep", "--model", "llama-70b", "--dp", "8..4096", "--format", "csv"],
    [sys.executable, "-c", "pass"],
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    if shutil.which("dpcost") is None:
        sys.exit("dpcost is not on PATH: install it first (see README.md)")
    for cmd in COMMANDS:
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times.append(time.perf_counter() - t0)
        label = " ".join(cmd[1:] if cmd[0] == "dpcost" else ["python -c pass"])
        print(f"{min(times) * 1e3:7.0f} ms best {statistics.median(times) * 1e3:7.0f} ms median   {label}")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
