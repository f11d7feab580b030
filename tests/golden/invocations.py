"""The invocations whose output is kept byte for byte under tests/golden/ (test_golden.py): `--format json` of
each in INVOCATIONS (NAME.json), and `--format markdown` of each in MARKDOWN (NAME.md), the tables as a reader sees
them.

Regenerate after an intended change, and say why in the commit:

    python tests/golden/invocations.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

INVOCATIONS: dict[str, list[str]] = {
    "estimate-llama-70b-dp512": ["estimate", "--model", "llama-70b", "--dp", "512"],
    "estimate-deepseek-v3-b200": ["estimate", "--model", "deepseek-v3", "--dp", "512", "--topology", "dgx-b200"],
    "estimate-mixtral-zero2-accum4-megatron": [
        "estimate", "--model", "mixtral-8x7b", "--dp", "64", "--zero", "2", "--accum", "4", "--recipe", "megatron",
    ],
    "estimate-llama-8b-inference": [
        "estimate", "--model", "llama-8b", "--dp", "64", "--mode", "inference", "--batch", "16",
    ],
    "memory-llama-70b-dp512": ["memory", "--model", "llama-70b", "--dp", "512"],
    "collective-all-reduce-64": ["collective", "--op", "all_reduce", "--ranks", "64", "--sizes", "1M,64M,1G"],
    "sweep-llama-8b": ["sweep", "--model", "llama-8b", "--dp", "8,64,512"],
    # the per-op compute model: its compute section (where the compute goes, MFU and HFU)
    "estimate-llama-8b-ops": ["estimate", "--model", "llama-8b", "--dp", "8", "--compute-model", "ops"],
    "estimate-mixtral-ops-full-recompute-accum4": [
        "estimate", "--model", "mixtral-8x7b", "--dp", "64", "--compute-model", "ops", "--recompute", "full",
        "--accum", "4",
    ],
    # layouts (issue 19): Llama 3 405B as Meta trained it (arXiv 2407.21783 Table 4), DeepSeek-V3 as DeepSeek did
    "estimate-llama-405b-tp8-pp16-dp128": [
        "estimate", "--model", "llama-405b", "--tp", "8", "--pp", "16", "--dp", "128", "--global-batch", "2048",
        "--seq-len", "8192", "--sequence-parallel",
    ],
    "estimate-deepseek-v3-pp16-ep64-h800": [
        "estimate", "--model", "deepseek-v3", "--pp", "16", "--ep", "64", "--dp", "128", "--topology", "hgx-h800",
        "--global-batch", "15360", "--seq-len", "4096", "--ep-comm-overlap",
    ],
}  # fmt: skip

MARKDOWN: dict[str, list[str]] = {
    "estimate-llama-8b-ops": INVOCATIONS["estimate-llama-8b-ops"],
    "estimate-deepseek-v3-pp16-ep64-h800": INVOCATIONS["estimate-deepseek-v3-pp16-ep64-h800"],
    # markdown only: plan's JSON carries the search's wall time
    "plan-llama-70b-256": [
        "plan", "--model", "llama-70b", "--gpus", "256", "--global-batch", "512", "--seq-len", "8192",
    ],
}  # fmt: skip


def goldens() -> dict[str, tuple[list[str], str]]:
    """Each golden file's name, with the invocation and the format it keeps."""
    kept = {f"{name}.json": (args, "json") for name, args in INVOCATIONS.items()}
    return kept | {f"{name}.md": (args, "markdown") for name, args in MARKDOWN.items()}


def run(args: list[str], fmt: str = "json") -> str:
    from typer.testing import CliRunner

    from dpcost.cli import app

    result = CliRunner().invoke(app, [*args, "--format", fmt])
    if result.exit_code != 0:
        raise SystemExit(f"dpcost {' '.join(args)}: exit {result.exit_code}: {result.output}")
    return result.stdout


def main() -> int:
    for file, (args, fmt) in goldens().items():
        (HERE / file).write_text(run(args, fmt))
        print(f"wrote tests/golden/{file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
