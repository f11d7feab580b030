#!/usr/bin/env python3
"""Fuzz dpcost's command line: N command lines generated from every command's real options, run in process.

    python benchmarks/fuzz.py [--n 10000] [--seed 0] [--show 5] [--jobs 2] [--keep]

The generator reads the options from the typer app itself (`typer.main.get_command(app)`): every command and
subcommand (`show model`, `models import`, ...) and every parameter's flag, choices, metavar and type, so a flag
added tomorrow is fuzzed without touching this file. Each parameter draws from valid values (choices, catalog
names, the repository's own model, topology, plan, config.json and nccl-tests files, sizes and times written the
way people write them) or, on about one line in four, from hostile ones (empty, 0, -1, 1e308, nan, inf, unicode,
10,000 characters, missing files, /dev/zero, a folder, wrong units, and files mutated from the real ones). Lines
are made from `Random(f"{seed}-{i}")`, so line i is the same whatever --n and --jobs are.

The rules each result is held to (issue 15):
- exit 0: a JSON or YAML output parses, and every number in it is finite and non-negative (but the few signed
  keys of SIGNED and paths of SIGNED_PATHS); a `check` exit 0 has passed=true, an `estimate --check` exit 0 fits;
- exit 1: only when a check failed: `check` with passed=false, or `estimate --check` with a plan that does not fit
  (read from the JSON; a line in another format is run again with --format json to read it);
- exit 2: exactly one line on stderr, starting `dpcost: error:`, in dpcost's words (never pydantic's);
- exit 3, any other code, an exception that escapes the command, a traceback in any output, or a line that runs
  longer than --timeout: a bug.
Failures are grouped by class (exit 3s by exception type and the innermost dpcost frame, found by running the line
again with DPCOST_DEBUG=1); each class is shown with its count and its shortest line, shrunk option by option while
it still fails the same way. Exit status 1 when any line failed. Repro lines run from the repository's top folder;
files the fuzzer made live in the work folder it prints (kept when something failed).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# The package as imported: the checkout's under an editable install, site-packages' under `pip install .`
DPCOST = Path(importlib.util.find_spec("dpcost").origin or REPO / "dpcost" / "__init__.py").parent  # type: ignore[union-attr]

# Keys under which a number may be negative (any key on its path in the document), and why. Everything else is a
# count, a size, a time, a rate or a fraction, and a negative one is a bug.
SIGNED = {
    # `collective --compare`: predicted / measured - 1, by column; the model under-predicting is negative.
    "error": "collective --compare: predicted / measured - 1",
    # a scenario that does not fit may step faster than the best plan that does; its check fails (checks.py)
    "max_behind_best": "check --max-behind-best: step / the best fitting plan's - 1",
}
# Paths (as failures name them) under which a number may be negative, where the key alone also names an unsigned
# number elsewhere: `calibrate --steps` gives each row's predicted / measured - 1, and the geometric means of
# their absolute values under the same keys at the top.
SIGNED_PATHS = {
    "rows[].error_defaults": "calibrate --steps: a row's predicted / measured - 1, before the fit",
    "rows[].error_fitted": "calibrate --steps: a row's predicted / measured - 1, after it",
    "rows[].error_held_out": "calibrate --steps: the held-out row's predicted / measured - 1",
}

HOSTILE_SHARE = 0.25  # lines with one or more hostile values or a malformed command line
TIMEOUT = 120.0  # seconds a line may run in process before it counts as a hang (a calibrate fit takes 2-8 s)
MAX_KEPT = 20  # example lines kept per failure class

# How often each command is drawn, by its words; a command not listed (a new one) gets DEFAULT_WEIGHT.
WEIGHTS = {
    "estimate": 30,
    "check": 14,
    "sweep": 12,
    "memory": 11,
    "collective": 11,
    "calibrate": 1.2,  # a fit takes ~2 s; most lines fail fast on their input anyway
    "plan": 1.5,  # a search takes 0.2-5 s
    "schema": 2.5,
    "show model": 3,
    "show topology": 3,
    "models": 2,
    "models import": 3,
    "topologies": 1.5,
    "show": 0.3,
    "": 0.5,
}
DEFAULT_WEIGHT = 3.0
FORMATS = {"json": 62, "yaml": 9, "csv": 8, "table": 10, "markdown": 6, "html": 5}
WIDTHS = {"100": 40, "80": 30, "160": 15, "240": 8, "40": 5, "20": 2}

# Which parameters a valid line does not combine (by click name, per command): a line that gives both is bad
# input by design, and a fuzzer that mostly made those would rarely get past the flags. Hostile lines ignore this.
EXCLUSIVE: dict[str, list[tuple[str, ...]]] = {
    "memory": [("model", "params")],
    "collective": [("compare", "sizes")],
    "estimate": [("batch__global_batch", "batch__accumulation")],
    "sweep": [("batch__global_batch", "batch__accumulation")],
    "check": [("batch__global_batch", "batch__accumulation")],
    "calibrate": [("files", "steps"), ("base", "steps"), ("batch__global_batch", "batch__accumulation")],
}
ONE_OF: dict[str, tuple[str, ...]] = {
    "memory": ("model", "params"),
    "calibrate": ("files", "steps"),
}  # a valid line gives one of these


# ------------------------------------------------------------------------------------------------ value pools

HOSTILE = [
    "", " ", "0", "-1", "-0", "1e308", "-1e308", "1e-320", "nan", "NaN", "inf", "-inf", "Infinity", "9" * 400,
    "0x10", "1_000", "1,5", "1.5.2", " 8 ", "true", "none", "auto", "null", "-", "--", "--help", "ünïcødé", "🚀🚀",
    "日本語", "a" * 10_000, "x y z", "$(echo)", "'", '"', "\\", "%", "%s", "{}", "[]", "/nonexistent/file.yaml",
    "/dev/zero", "/dev/null", "/", ".", "..", "-5%", "1e3", "2**10", "8k", "80GB", "3us", "25MiB", "40%",
]  # fmt: skip
HOSTILE_BY_KIND = {
    "size": ["25", "25 MiB", "25MiBs", "-25MiB", "1e308B", "1e308GB", "nanMiB", "infGB", "0B", "25s", "25%",
             "1e-9B", "25 Mb", "25mib", "25KiB/s", "9" * 40 + "TB"],
    "time": ["5", "5 us", "-1ms", "1e308s", "5MiB", "nans", "infs", "1e-30s", "5 min", "5h", "-0s", "1e5s"],
    "int": ["1.5", "1e3", "-5", "0", "8k", "8K", "8Ki", "2147483648", "9" * 30, "1e308", "ten", "4096.0"],
    "number": ["1.5", "-0.1", "2", "101%", "-5%", "1e308", "1e-308", "nan%", "0", "40 %", "0.4.", "½"],
    "dp_list": ["0..8", "8..1", "a,b", ",", "8,,16", "1..999999999", "99999999..999999999", "8..4096..2", "-8",
                "8.5", "0", "10000001", " , ", "1" * 12],
    "count": ["0", "-7B", "1e308", "nan", "7.5X", "7.5 B", "1e-3", "inf", "B", "7,5B", "0.5"],
}  # fmt: skip

DP = ["1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1024", "2048", "4096", "8192", "16384", "3", "7",
      "12", "24", "100", "500", "1000", "65536", "131072"]  # fmt: skip
VALID_BY_FLAG: dict[str, list[str]] = {
    "--dp@sweep": ["8..4096", "8,64,512", "1..64", "8..64,96", "1", "16", "2..2", "1000,2000", "1..16384",
                   "8,8,8", "512", "72,144,288"],
    "--micro-batch": ["1", "1", "2", "4", "8", "16", "64"],
    "--seq-len": ["512", "1024", "2048", "4096", "8192", "32768", "131072", "8k", "4Ki", "1"],
    "--accum": ["1", "2", "4", "8", "32", "128"],
    "--global-batch": ["64", "256", "512", "1024", "4096", "1000", "1M"],
    "--batch": ["1", "8", "64", "256"],
    "--mfu": ["0.3", "0.4", "0.5", "40%", "0.55", "1", "0.001"],
    "--skew": ["0", "0.05", "5%", "0.2", "10"],
    "--overlap-slowdown": ["0", "0.18", "0.3", "1", "25%"],
    "--overlap-comm": ["true", "false", "yes", "no", "1", "0", "on", "off"],
    "--bucket-size": ["25MiB", "25MB", "100MB", "1GiB", "500M", "5e8", "1MiB", "4KiB"],
    "--first-bucket-size": ["1MiB", "0", "25MiB", "0B", "1GB"],
    "--sync-jitter": ["0", "0.9ms", "1ms", "900us", "0.0009", "5us", "1s"],
    "--min-bytes": ["8", "64K", "1M", "1", "128M"],
    "--max-bytes": ["16G", "1G", "128M", "8", "64K", "32G"],
    "--factor": ["2", "4", "1.5", "10", "2.0", "1.1"],
    "--sizes": ["64M,1G", "8", "1K,2K,4K", "16G", "25MiB", "1,2,3", "128M"],
    "--ranks": ["2", "4", "8", "16", "32", "64", "128", "1024", "72", "3", "1"],
    "--gpus-per-node": ["4", "8", "72", "1", "16"],
    "--params": ["7.5B", "70B", "1e9", "175B", "8.03B", "405B", "1T", "350M", "1"],
    "--largest-layer-params": ["1B", "500M", "2.1B", "1", "10B"],
    "--max-memory": ["70GB", "80GB", "40GiB", "200GB", "1TB", "16GB", "79.9GB"],
    "--max-step-time": ["7s", "10s", "500ms", "1s", "60s", "7.5s"],
    "--min-efficiency": ["0.8", "85%", "0.95", "0.5", "99%", "1"],
    "--max-exposed-comm": ["100ms", "1s", "0s", "10ms", "5s"],
    "--min-tokens-per-s": ["300K", "1M", "400000", "1e6", "10K", "50M"],
    "--name@calibrate": ["my-cluster", "Cluster 1", "x", "h100-fitted", "A.B_C"],
    "--name@models import": ["gemma-test", "x", "qwen3-8b", "m.1", "a-b_c"],
}  # fmt: skip


def _files(pattern: str) -> list[str]:
    return sorted(str(p) for p in REPO.glob(pattern))


@dataclass
class Pools:
    """Everything a value can be drawn from: the catalog, the repository's files, and files made to be wrong."""

    work: Path
    models: list[str]
    topologies: list[str]
    model_files: list[str] = field(default_factory=lambda: _files("models/*.yaml"))
    topology_files: list[str] = field(default_factory=lambda: _files("topologies/*.yaml"))
    hf_configs: list[str] = field(default_factory=lambda: _files("tests/reference/hf-configs/*.json"))
    plans: list[str] = field(default_factory=lambda: _files("examples/*.yaml"))
    nccl: list[str] = field(
        default_factory=lambda: (
            _files("tests/reference/nccl-tests/*.log")
            + _files("tests/reference/nccl-tests/*.csv")
            + _files("examples/*.log")
        )
    )
    steps: list[str] = field(default_factory=lambda: _files("examples/training-steps-*.csv"))
    training: list[str] = field(default_factory=lambda: _files("examples/training-configs/*.*"))
    # made by make_files: model, topology, plan, nccl, hf, training, junk
    bad: dict[str, list[str]] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ hostile files

_HOSTILE_SCALARS: list[Any] = [0, -1, -0.0, 1e308, float("nan"), float("inf"), -float("inf"), "", "abc", None, [],
                               {}, 10**20, 1e-300, "1e308GB", "-80GB", "0GB", "nan", True, "ünï", "x" * 3000, 0.5,
                               "-450GB/s", "0us", "1e308TFLOPS", 2**63]  # fmt: skip


def _leaves(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*path, k)
            yield from _leaves(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield (*path, i)
            yield from _leaves(v, (*path, i))


def _mutate_doc(doc: Any, rng: random.Random) -> str:
    """Change one place of a loaded YAML/JSON document in place; say what was done."""
    paths = list(_leaves(doc))
    if not paths:
        return "unchanged"
    path = rng.choice(paths)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    action = rng.random()
    if action < 0.15 and isinstance(parent, dict):
        del parent[last]
        return f"deleted {'.'.join(map(str, path))}"
    if action < 0.22 and isinstance(parent, list):
        parent.append(parent[last])
        return f"repeated {'.'.join(map(str, path))}"
    value = rng.choice(_HOSTILE_SCALARS)
    parent[last] = value
    return f"{'.'.join(map(str, path))} = {str(value)[:40]!r}"


def _mutate_table(text: str, rng: random.Random) -> str:
    """Change an nccl-tests log or CSV: a number in a data row, a dropped header, a cut or a repeated row."""
    lines = text.splitlines()
    rows = [i for i, ln in enumerate(lines) if re.match(r"^\s*\d+[\s,]", ln)]
    action = rng.random()
    if rows and action < 0.6:
        i = rng.choice(rows)
        cells = re.split(r"(\s+|,)", lines[i])
        numeric = [j for j, c in enumerate(cells) if re.fullmatch(r"[0-9.e+-]+", c)]
        if numeric:
            j = rng.choice(numeric)
            cells[j] = rng.choice(["nan", "inf", "-1", "1e308", "1e-300", "0", "N/A", "abc", "-0", "1e999", ""])
            lines[i] = "".join(cells)
    elif rows and action < 0.75:
        i = rng.choice(rows)
        lines.insert(i, lines[i])
    elif action < 0.85:
        lines = [ln for ln in lines if not re.search(r"size|#\s+\(B\)|time", ln)]
    elif rows:
        lines = lines[: rng.choice(rows)]
    return "\n".join(lines) + "\n"


def make_files(work: Path, seed: int, per_kind: int = 8) -> dict[str, list[str]]:
    """Files made to be wrong, in `work`/files: mutations of the repository's own specs, plans, configs and
    nccl-tests runs, and junk. A MANIFEST says what each mutation changed."""
    import yaml

    rng = random.Random(f"{seed}-files")
    folder = work / "files"
    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, list[str]] = defaultdict(list)
    manifest = []

    def put(kind: str, name: str, text: str | bytes, why: str) -> None:
        path = folder / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        made[kind].append(str(path))
        manifest.append(f"{name}: {why}")

    sources = {
        "model": (_files("models/*.yaml"), ".yaml"),
        "topology": (_files("topologies/*.yaml"), ".yaml"),
        "plan": (_files("examples/*.yaml"), ".yaml"),
        "hf": (_files("tests/reference/hf-configs/*.json"), ".json"),
        # --from's DeepSpeed JSON and Accelerate YAML (json.dumps writes NaN and Infinity as Python's json reads them)
        "training": (_files("examples/training-configs/*.json"), ".json"),
        "accelerate": (_files("examples/training-configs/*.yaml"), ".yaml"),
    }
    for kind, (paths, suffix) in sources.items():
        for k in range(per_kind):
            src = Path(rng.choice(paths))
            text = src.read_text(encoding="utf-8")
            doc = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
            whats = [_mutate_doc(doc, rng) for _ in range(rng.choice([1, 1, 2]))]
            out = json.dumps(doc) if suffix == ".json" else yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
            put(kind, f"{kind}-{k}-{src.stem}{suffix}", out, f"{src.name}, {'; '.join(whats)}")
    logs = _files("tests/reference/nccl-tests/*.log") + _files("tests/reference/nccl-tests/*.csv")
    for k in range(per_kind * 2):
        src = Path(rng.choice(logs))
        put("nccl", f"nccl-{k}-{src.name}", _mutate_table(src.read_text(encoding="utf-8"), rng), f"{src.name} changed")
    for k, name in enumerate(["nccl.txt", "run1.log", "out"]):  # a real run under a name that says nothing
        src = Path(logs[(k * 7) % len(logs)])
        put("nccl", name, src.read_text(encoding="utf-8"), f"a copy of {src.name}")
    put("junk", "empty.yaml", "", "empty")
    put("junk", "empty.json", "", "empty")
    put("junk", "empty.log", "", "empty")
    put("junk", "binary.yaml", bytes(rng.randrange(256) for _ in range(2048)), "random bytes")
    put("junk", "latin1.json", '{"hidden_size": "é"}'.encode("latin-1"), "not UTF-8")
    put("junk", "list.yaml", "- a\n- b\n", "a list at the top")
    put("junk", "scalar.yaml", "42\n", "a number at the top")
    put("junk", "deep.yaml", "[" * 5000 + "]" * 5000, "nested 5,000 deep")
    put("junk", "bigint.yaml", "name: x\nhidden: " + "9" * 5000 + "\n", "a 5,000-digit number")
    put("junk", "dupkey.yaml", "name: a\nname: b\n", "a key twice")
    put("junk", "big.yaml", "# " + "x" * (1 << 20) + "\n", "over 1 MiB")
    put("junk", "nan.json", '{"hidden_size": NaN, "num_hidden_layers": Infinity}', "NaN and Infinity")
    put("junk", "header-only.log", "#  size  count  type  redop  root  time  algbw  busbw #wrong\n", "a header")
    (folder / "adir.yaml").mkdir(exist_ok=True)
    made["junk"].append(str(folder / "adir.yaml"))
    (folder / "MANIFEST").write_text("\n".join(manifest) + "\n", encoding="utf-8")
    return dict(made)


# ------------------------------------------------------------------------------------------------ the command tree


@dataclass
class Param:
    """One parameter of one command, as click knows it, and the kind of value the fuzzer gives it."""

    name: str
    opts: list[str]  # ['--model', '-m']; an argument: []
    secondary: list[str]  # ['--no-flash-attention']
    is_flag: bool
    required: bool
    nargs: int
    choices: list[str]
    kind: str


@dataclass
class Command:
    words: tuple[str, ...]  # ('show', 'model')
    params: list[Param]

    @property
    def label(self) -> str:
        return " ".join(self.words) or "(dpcost)"


def _annotation(p: Any) -> Any:
    td = getattr(p, "type_descriptor", None)  # typer >= 0.2x's vendored click
    if td is not None:
        return td.annotation
    return getattr(p, "type", None)


def _choices(p: Any) -> list[str]:
    td = getattr(p, "type_descriptor", None)
    raw: Any = ()
    if td is not None and td.is_choice:
        raw = td.choices or ()
    elif hasattr(getattr(p, "type", None), "choices"):
        raw = p.type.choices
    out = [str(getattr(c, "value", c)) for c in raw]
    if not out and p.metavar and "|" in p.metavar:
        out = p.metavar.split("|")
    return out


def _kind(words: tuple[str, ...], p: Any, choices: list[str]) -> str:
    """The kind of value a parameter takes: by its flag or argument name where it names a thing (a model, a
    file), else by its choices, its metavar (SIZE, TIME, N, X) and its type."""
    cmd = " ".join(words)
    flag = p.opts[0] if p.opts and p.opts[0].startswith("--") else (p.opts[0] if p.opts else "")
    name = p.name or ""
    is_argument = not any(o.startswith("-") for o in p.opts)
    ann = str(_annotation(p))
    if getattr(p, "is_flag", False):
        return "flag"
    if is_argument:
        by_name = {"plan": "plan_file", "files": "nccl_file", "config": "hf_config", "kind": "choice"}
        if name == "name":
            return "topology" if words[-1] == "topology" else "model"
        return by_name.get(name, "choice" if choices else "text")
    by_flag = {
        "--model": "model", "--topology": "topology", "--base": "topology", "--output": "output",
        "--junit": "junit", "--save-topology": "save", "--save-plan": "save", "--plot": "plot",
        "--compare": "nccl_file", "--steps": "steps_file",
        "--params": "count", "--largest-layer-params": "count", "--name": "name", "--format": "format",
        "--min-tokens-per-s": "count", "--from": "training_config",
    }  # fmt: skip
    if flag == "--dp":
        return "dp_list" if "int" not in ann else "dp"
    if flag in by_flag:
        return by_flag[flag]
    if choices:
        return "choice"
    metavar = (p.metavar or "").upper()
    if metavar == "SIZE,...":
        return "size_list"
    if metavar in ("SIZE", "TIME", "N", "X"):
        return {"SIZE": "size", "TIME": "time", "N": "int", "X": "number"}[metavar]
    if "int" in ann:
        return "int"
    if "float" in ann:
        return "number"
    if "Path" in ann:
        return "path"
    del cmd
    return "text"


def commands() -> list[Command]:
    """Every command and subcommand of the app with its parameters, read from click."""
    import typer

    from dpcost.cli import app

    root = typer.main.get_command(app)
    out: list[Command] = []

    def walk(cmd: Any, words: tuple[str, ...]) -> None:
        params = []
        for p in cmd.params:
            choices = _choices(p)
            params.append(
                Param(
                    name=p.name or "",
                    opts=list(p.opts),
                    secondary=list(getattr(p, "secondary_opts", []) or []),
                    is_flag=bool(getattr(p, "is_flag", False)),
                    required=bool(p.required),
                    nargs=int(p.nargs),
                    choices=choices,
                    kind=_kind(words or ("",), p, choices),
                )
            )
        out.append(Command(words, params))
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, (*words, name))

    walk(root, ())
    return out


# ------------------------------------------------------------------------------------------------ generating lines


@dataclass
class Case:
    """One command line: its words, its option groups (a flag and its value, or an argument), its environment."""

    index: int
    words: tuple[str, ...]
    groups: list[list[str]]
    env: dict[str, str]
    hostile: bool

    @property
    def argv(self) -> list[str]:
        return [*self.words, *(t for g in self.groups for t in g)]

    @property
    def label(self) -> str:
        return " ".join(self.words) or "(dpcost)"

    def shell(self) -> str:
        """The line as a shell command, run from the repository's top folder."""
        env = [f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        words = [_short(t) if _short(t).startswith("$(") else shlex.quote(_short(t)) for t in self.argv]
        return " ".join([*env, "dpcost", *words])


def _short(token: str) -> str:
    """A token as the shell line shows it: repository paths relative, a long run of one character made by python."""
    token = token.replace(str(REPO) + "/", "")
    if len(token) > 100 and len(set(token)) == 1:
        return f"$(python3 -c 'print(\"{token[0]}\" * {len(token)})')"
    return token


def _pick(rng: random.Random, weights: dict[str, float]) -> str:
    keys = list(weights)
    return rng.choices(keys, [weights[k] for k in keys])[0]


class Generator:
    def __init__(self, pools: Pools, cmds: list[Command]) -> None:
        self.pools = pools
        self.cmds = cmds
        self.weights = [WEIGHTS.get(" ".join(c.words), DEFAULT_WEIGHT) for c in cmds]

    # -- values

    def _file_for(self, rng: random.Random, kind: str) -> str:
        p, bad = self.pools, self.pools.bad
        if kind == "model":
            r = rng.random()
            if r < 0.62:
                return rng.choice(p.models)
            if r < 0.77:
                return rng.choice(p.model_files)
            if r < 0.9:
                return rng.choice(p.hf_configs)
            return rng.choice(bad.get("model", []) + bad.get("hf", []) or p.models)
        if kind == "topology":
            r = rng.random()
            if r < 0.75:
                return rng.choice(p.topologies)
            if r < 0.9:
                return rng.choice(p.topology_files)
            return rng.choice(bad.get("topology", []) or p.topologies)
        if kind == "plan_file":
            return rng.choice(p.plans) if rng.random() < 0.8 else rng.choice(bad.get("plan", []) or p.plans)
        if kind == "nccl_file":
            return rng.choice(p.nccl) if rng.random() < 0.8 else rng.choice(bad.get("nccl", []) or p.nccl)
        if kind == "hf_config":
            return rng.choice(p.hf_configs) if rng.random() < 0.85 else rng.choice(bad.get("hf", []) or p.hf_configs)
        if kind == "training_config":
            bad_ones = bad.get("training", []) + bad.get("accelerate", []) + bad.get("junk", [])
            return rng.choice(p.training) if rng.random() < 0.7 else rng.choice(bad_ones or p.training)
        if kind == "steps_file":
            return rng.choice(p.steps) if rng.random() < 0.8 else rng.choice(bad.get("junk", []) or p.steps)
        raise KeyError(kind)

    def _out(self, rng: random.Random, case_index: int, fmt: str, suffix: str | None = None) -> str:
        if rng.random() < 0.15:
            return "-"
        ext = suffix or {"table": "txt", "markdown": "md"}.get(fmt, fmt)
        return str(self.pools.work / "out" / f"{case_index}-{rng.randrange(3)}.{ext}")

    def valid(self, rng: random.Random, cmd: Command, p: Param, i: int, fmt: str) -> list[str]:
        """The values (one, or several for a nargs=-1 argument) of one parameter, drawn from valid ones."""
        key = f"{p.opts[0] if p.opts else p.name}@{' '.join(cmd.words)}"
        if p.name == "precision__recipe" and cmd.words == ("memory",) and rng.random() < 0.5:
            return ["deepspeed"]
        if key in VALID_BY_FLAG:
            return [rng.choice(VALID_BY_FLAG[key])]
        if p.opts and p.opts[0] in VALID_BY_FLAG:
            return [rng.choice(VALID_BY_FLAG[p.opts[0]])]
        k = p.kind
        if k in ("model", "topology", "plan_file", "hf_config", "steps_file", "training_config"):
            return [self._file_for(rng, k)]
        if k == "nccl_file":
            n = 1 if p.nargs == 1 else rng.choice([1, 1, 1, 2, 3])
            return [self._file_for(rng, k) for _ in range(n)]
        if k == "format":
            return [_pick(rng, {f: w for f, w in FORMATS.items() if f in p.choices} or {c: 1 for c in p.choices})]
        if k == "choice":
            return [rng.choice(p.choices)]
        if k == "dp":
            return [rng.choice(DP)]
        if k == "dp_list":
            return [rng.choice(VALID_BY_FLAG["--dp@sweep"])]
        if k == "output":
            return [self._out(rng, i, fmt, "yaml" if cmd.words == ("models", "import") else None)]
        if k == "junit":
            return [self._out(rng, i, fmt, "xml")]
        if k == "save":
            return ["-"] if rng.random() < 0.2 else [str(self.pools.work / "out" / f"{i}-fitted.yaml")]
        if k == "plot":
            return [str(self.pools.work / "out" / f"{i}.{rng.choice(['svg'] * 9 + ['png'])}")]
        if k == "size":
            return [rng.choice(["25MiB", "1GB", "8", "64K", "1M", "100MB"])]
        if k == "size_list":
            return [rng.choice(VALID_BY_FLAG["--sizes"])]
        if k == "time":
            return [rng.choice(["1ms", "5us", "0.5s", "0"])]
        if k == "count":
            return [rng.choice(VALID_BY_FLAG["--params"])]
        if k == "int":
            return [rng.choice(["1", "2", "8", "16", "64"])]
        if k == "number":
            return [rng.choice(["0", "0.5", "1", "2"])]
        if k == "name":
            return [rng.choice(["x", "my-cluster", "gemma-test"])]
        if k == "path":
            return [rng.choice(self.pools.model_files + self.pools.nccl)]
        return [rng.choice(["x", "llama-8b", "dgx-h100", "abc"])]

    def hostile(self, rng: random.Random, p: Param) -> str:
        specific = HOSTILE_BY_KIND.get({"dp": "int", "size_list": "size"}.get(p.kind, p.kind), [])
        r = rng.random()
        bad = [f for fs in self.pools.bad.values() for f in fs]
        if r < 0.45 and specific:
            return rng.choice(specific)
        if r < 0.65 and bad and p.kind in ("model", "topology", "plan_file", "nccl_file", "hf_config", "path"):
            return rng.choice(bad)
        if r < 0.72 and p.kind in ("output", "junit", "save", "plot"):
            return rng.choice(
                [
                    "/dev/full",
                    "/nonexistent/out.json",
                    str(self.pools.work),
                    "",
                    "/dev/null",
                    str(self.pools.work / "out" / "x.txt"),
                    str(self.pools.work / "files" / "adir.yaml"),
                ]
            )
        return rng.choice(HOSTILE)

    # -- lines

    def _consistent(self, rng: random.Random, cmd: Command, chosen: list[Param]) -> list[Param]:
        """A valid line's parameters without the combinations the command refuses by design."""
        label = " ".join(cmd.words)
        by_name = {p.name: p for p in cmd.params}
        names = [p.name for p in chosen]
        if label in ONE_OF and not any(n in names for n in ONE_OF[label]):
            names.append(rng.choice(ONE_OF[label]))
        for group in EXCLUSIVE.get(label, []):
            present = [n for n in names if n in group]
            if len(present) > 1:
                keep = rng.choice(present)
                names = [n for n in names if n not in group or n == keep]
        if label == "check":  # a plan file, or one plan from --model and --dp; the file sets its own options
            if "plan" in names:
                names = [n for n in names if n not in ("model", "dp", "topology") and "__" not in n]
            else:
                names += [n for n in ("model", "dp") if n not in names]
        if label == "memory" and "params" in names and "largest_layer_params" not in names and rng.random() < 0.7:
            names.append("largest_layer_params")
        if label == "memory" and "gpus_per_node" in names:  # DeepSpeed's per-CPU figures only
            names = [n for n in names if n != "precision__recipe"] + ["precision__recipe"]
        return [by_name[n] for n in dict.fromkeys(names) if n in by_name]

    def case(self, seed: int, i: int) -> Case:
        rng = random.Random(f"{seed}-{i}")
        cmd = rng.choices(self.cmds, self.weights)[0]
        hostile = rng.random() < HOSTILE_SHARE
        density = rng.choice([0.05, 0.15, 0.3, 0.5, 0.85])
        env = {"COLUMNS": _pick(rng, WIDTHS)}
        if cmd.words[:1] == ("check",) and rng.random() < 0.2:
            env["GITHUB_ACTIONS"] = "true"
        fmt_param = next((p for p in cmd.params if p.kind == "format"), None)
        fmt = self.valid(rng, cmd, fmt_param, i, "")[0] if fmt_param else "table"
        groups: list[list[str]] = []
        arguments: list[list[str]] = []
        chosen: list[Param] = []
        for p in cmd.params:
            if p.kind == "format":
                include = rng.random() < 0.97
            elif p.required:
                include = not (hostile and rng.random() < 0.06)
            elif not p.opts or not p.opts[0].startswith("-"):  # an optional argument: check's plan file
                include = rng.random() < 0.4
            elif p.name == "version":
                include = rng.random() < 0.2
            elif cmd.words == ("check",) and p.name in ("model", "dp"):
                include = rng.random() < 0.6
            else:
                include = rng.random() < density
            if include:
                chosen.append(p)
        if not hostile:
            chosen = self._consistent(rng, cmd, chosen)
        hostile_params = set()
        if hostile and chosen:
            hostile_params = {p.name for p in rng.sample(chosen, min(len(chosen), rng.choice([1, 1, 1, 2, 3])))}
        for p in chosen:
            is_argument = not any(o.startswith("-") for o in p.opts)
            if p.is_flag:
                names = p.opts[:1] + p.secondary if p.secondary else p.opts
                groups.append([rng.choice(names)])
                continue
            if p.kind == "format":
                values = [fmt]
            elif p.name in hostile_params:
                values = [self.hostile(rng, p)]
            else:
                values = self.valid(rng, cmd, p, i, fmt)
            if is_argument:
                arguments.append(values)
            else:
                flag = rng.choice(p.opts) if rng.random() < 0.2 else p.opts[0]
                if rng.random() < 0.1 and flag.startswith("--"):
                    groups.append([f"{flag}={values[0]}"])
                else:
                    groups.append([flag, values[0]])
        rng.shuffle(groups)
        for a in arguments:
            groups.insert(rng.randrange(len(groups) + 1), a)
        if hostile and rng.random() < 0.3:  # a malformed command line
            r = rng.random()
            options = [p for p in cmd.params if p.opts and p.opts[0].startswith("-") and not p.is_flag]
            if r < 0.25:
                groups.append([rng.choice(["--no-such-flag", "--Model", "-z", "--dp=", "--format=xml"])])
            elif r < 0.45 and groups:
                groups.append(list(rng.choice(groups)))  # an option given twice
            elif r < 0.6 and options:
                groups.append([rng.choice(options).opts[0]])  # an option without its value, at the end
            elif r < 0.75:
                groups.insert(rng.randrange(len(groups) + 1), [rng.choice(["stray", "8", "-", "--"])])
            elif r < 0.85:
                groups.append(["--help"])
            else:
                groups.append(["--format", "json"])
        return Case(i, cmd.words, groups, env, hostile)


# ------------------------------------------------------------------------------------------------ running one line


class _Timeout(BaseException):  # not an Exception: dpcost's catch-all must not turn it into an exit 3
    pass


@dataclass
class Result:
    code: int | None
    stdout: str
    stderr: str
    seconds: float
    error: str = ""  # an exception that escaped the command: its type, message and innermost dpcost frame
    timed_out: bool = False


def _where(tb: Any) -> str:
    """The innermost frame in dpcost/ (or the innermost frame at all) of a traceback, as path:line in function."""
    frames = traceback.extract_tb(tb)
    ours = [f for f in frames if f.filename.startswith(str(DPCOST))] or frames
    f = ours[-1]
    root = DPCOST.parent if f.filename.startswith(str(DPCOST)) else REPO
    path = os.path.relpath(f.filename, root) if f.filename.startswith(str(root)) else f.filename
    return f"{path}:{f.lineno} in {f.name}"


_ROOT: Any = None


def run(argv: list[str], env: dict[str, str], timeout: float = TIMEOUT, debug: bool = False) -> Result:
    """Run one command line in this process: its exit code and what it wrote."""
    global _ROOT
    if _ROOT is None:
        import typer

        from dpcost.cli import app

        _ROOT = typer.main.get_command(app)
    saved = dict(os.environ)
    os.environ.pop("DPCOST_DEBUG", None)
    os.environ.pop("GITHUB_ACTIONS", None)
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    os.environ.update(env)
    if debug:
        os.environ["DPCOST_DEBUG"] = "1"
    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    error, timed_out = "", False

    def alarm(_signum: int, _frame: Any) -> None:
        raise _Timeout

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    stdin = sys.stdin
    t0 = time.perf_counter()
    try:
        sys.stdin = io.StringIO("")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            _ROOT.main(argv, prog_name="dpcost", standalone_mode=True)
        code = 0  # Group.main always exits; returning is itself odd, but not an error
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else -1)
        if not isinstance(exc.code, int | None):
            err.write(f"{exc.code}\n")
    except _Timeout:
        timed_out = True
    except BaseException as exc:  # escaped the command's own error handling
        error = f"{type(exc).__name__} at {_where(exc.__traceback__)}: {str(exc)[:200]}"
        err.write(traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        sys.stdin = stdin
        os.environ.clear()
        os.environ.update(saved)
    return Result(code, out.getvalue(), err.getvalue(), time.perf_counter() - t0, error, timed_out)


# ------------------------------------------------------------------------------------------------ the rules


@dataclass
class Failure:
    rule: str  # the class: "exit 3", "negative number", ...
    detail: str  # what makes it one bug: an exception and its frame, a JSON key, ...
    message: str = ""  # one example's message

    @property
    def key(self) -> tuple[str, str]:
        return (self.rule, self.detail)


def _numbers(doc: Any, path: str = "", keys: tuple[str, ...] = ()) -> Iterator[tuple[str, tuple[str, ...], float]]:
    """(path with list indices as [], the keys it sits under, value) of every number in a document."""
    if isinstance(doc, bool) or doc is None:
        return
    if isinstance(doc, int | float):
        yield path, keys, doc
    elif isinstance(doc, dict):
        named = (doc["check"],) if isinstance(doc.get("check"), str) else ()  # a check result: its value is its kind's
        for k, v in doc.items():
            yield from _numbers(v, f"{path}.{k}" if path else str(k), (*keys, *named, str(k)))
    elif isinstance(doc, list):
        for v in doc:
            yield from _numbers(v, f"{path}[]", keys)


def check_document(doc: Any, label: str) -> list[Failure]:
    """Every number finite; non-negative unless it sits under a SIGNED key or at a SIGNED_PATHS path."""
    out = []
    for path, keys, value in _numbers(doc):
        if isinstance(value, float) and not math.isfinite(value):
            out.append(Failure("non-finite number", f"{label}: {path}", f"{path} = {value}"))
        elif value < 0 and not SIGNED.keys() & set(keys) and path not in SIGNED_PATHS:
            out.append(Failure("negative number", f"{label}: {path}", f"{path} = {value}"))
    return out


def _option(argv: list[str], *names: str) -> str | None:
    """The value of the last of an option's spellings on a command line (as click reads it), or None."""
    value = None
    for j, tok in enumerate(argv):
        for n in names:
            if tok == n and j + 1 < len(argv):
                value = argv[j + 1]
            elif n.startswith("--") and tok.startswith(n + "="):
                value = tok[len(n) + 1 :]
    return value


def _has(argv: list[str], flag: str) -> bool:
    return flag in argv


def _document(case: Case, res: Result) -> tuple[Any, str | None]:
    """The line's JSON or YAML document if it printed or wrote one: (doc, None), (None, why not parsable), or
    (None, None) when it made none."""
    argv = case.argv
    if _has(argv, "--help") or _has(argv, "--version") or not case.words:
        return None, None
    if case.words == ("models", "import"):
        if _option(argv, "--output", "-o") == "-":
            return _parse(res.stdout, "yaml")
        return None, None
    fmt = _option(argv, "--format", "-f") or ("json" if case.words[0] == "schema" else "table")
    if fmt not in ("json", "yaml"):
        return None, None
    if case.words == ("calibrate",) and "-" in (_option(argv, "--save-topology"), _option(argv, "--save-plan")):
        return _parse(res.stdout, "yaml")  # the fitted topology or plan takes stdout's place
    output = _option(argv, "--output", "-o")
    if output not in (None, "-"):
        if not Path(output).is_file():  # /dev/null: written, and gone
            return None, None
        try:
            text = Path(output).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return None, f"cannot read --output {output}: {exc}"
        return _parse(text, fmt)
    return _parse(res.stdout, fmt)


# A quoted one is a string the input gave (a source, a title: the fuzzer writes "nan" into text fields), echoed as
# given; a number dpcost formats is never quoted.
NON_FINITE = re.compile(r"(?<![\w.\"'])-?(nan|inf|NaN|Infinity)(?![\w.\"'])")


def _text_format(case: Case) -> str | None:
    """A line's output format when it is a table, markdown, html or csv (None: a document, or no output)."""
    argv = case.argv
    if not case.words or case.words == ("models", "import") or _has(argv, "--help") or _has(argv, "--version"):
        return None
    if case.words == ("calibrate",) and "-" in (_option(argv, "--save-topology"), _option(argv, "--save-plan")):
        return None
    fmt = _option(argv, "--format", "-f") or ("json" if case.words[0] == "schema" else "table")
    return fmt if fmt in ("table", "markdown", "html", "csv") else None


def _output_text(case: Case, res: Result) -> str:
    output = _option(case.argv, "--output", "-o")
    if output in (None, "-"):
        return res.stdout
    if not Path(output).is_file():
        return ""
    try:
        return Path(output).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def check_text(text: str, fmt: str, label: str) -> list[Failure]:
    """A table, markdown, html or csv output shows no nan or inf (a csv cell that is one is caught the same way)."""
    m = NON_FINITE.search(text)
    if m is None:
        return []
    around = text[max(0, m.start() - 60) : m.end() + 20].replace("\n", " ")
    return [Failure("non-finite number", f"{label} ({fmt} output)", f"...{around}...")]


def _parse(text: str, fmt: str) -> tuple[Any, str | None]:
    """A JSON or YAML document, or why it does not parse (with what stands where it broke: `<?xml`, `::error`)."""
    try:
        if fmt == "json":
            return json.loads(text), None
        import yaml

        return yaml.safe_load(text), None
    except json.JSONDecodeError as exc:
        return None, f"JSONDecodeError at {text[exc.pos : exc.pos + 12]!r}: {exc.msg}"
    except Exception as exc:  # any parse error is the finding
        return None, f"{type(exc).__name__}: {str(exc)[:120]}"


def _verdict(case: Case, doc: Any) -> bool | None:
    """Whether the check the line asked for failed, from its JSON (None: it asked for none)."""
    if not isinstance(doc, dict):
        return None
    if case.words == ("check",):
        return doc.get("passed") is False
    if case.words == ("estimate",) and _has(case.argv, "--check"):
        summary = doc.get("summary")
        if isinstance(summary, dict) and isinstance(summary.get("fits"), bool):
            return not summary["fits"]
        setup = doc.get("setup") or {}
        if setup.get("mode") == "inference":
            return not (doc.get("inference") or {}).get("fits", False)
        stages = (doc.get("memory") or {}).get("stages") or []
        stage = setup.get("zero_stage")
        if isinstance(stage, int) and 0 <= stage < len(stages):
            return not stages[stage].get("fits", False)
    return None


def _json_again(case: Case, timeout: float) -> Any:
    """The JSON document of a line that printed another format: the line again with --format json on stdout (and
    no --junit, which may also be stdout)."""
    argv, out, skip = case.argv, [], 0
    for j, tok in enumerate(argv):
        if skip:
            skip -= 1
            continue
        if tok in ("--format", "-f", "--output", "-o", "--junit") and j + 1 < len(argv):
            skip = 1
            continue
        if tok.startswith(("--format=", "--output=", "--junit=")):
            continue
        out.append(tok)
    res = run([*out, "--format", "json"], case.env, timeout)
    doc, _ = _parse(res.stdout, "json")
    return doc


def _debug_where(case: Case, timeout: float) -> tuple[str, str]:
    """An exit 3's exception and innermost dpcost frame (its class), and the traceback's last frames, from the line
    run again with DPCOST_DEBUG=1."""
    res = run(case.argv, case.env, timeout, debug=True)
    if not res.error:
        return "(no exception with DPCOST_DEBUG=1)", ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', res.stderr)[-3:]
    last = " <- ".join(
        f"{os.path.relpath(f, REPO) if f.startswith(str(REPO)) else f}:{n} {fn}" for f, n, fn in frames[::-1]
    )
    return res.error.split(": ", 1)[0], f"{res.error.split(': ', 1)[-1]} | last frames: {last}"


TRACEBACK = "Traceback (most recent call last)"
PYDANTIC_WORDING = re.compile(r"Input should be|unable to parse string as|validation error|type=\w+_\w+")


def _is_file(name: str) -> bool:
    """Whether `name` is a file; a name the OS refuses (too long: a run that exited before writing it, e.g. --help)
    is not."""
    try:
        return Path(name).is_file()
    except OSError:
        return False


def judge(case: Case, res: Result, timeout: float = TIMEOUT) -> list[Failure]:
    """The line's failures."""
    fails: list[Failure] = []
    label = case.label
    if res.timed_out:
        return [Failure("timeout", label, f"ran over {timeout:.0f} s")]
    if res.error:
        return [Failure("exception escaped", res.error.split(": ", 1)[0], res.error)]
    if TRACEBACK in res.stdout or TRACEBACK in res.stderr:
        fails.append(Failure("traceback in output", label, res.stderr[-300:]))
    code = res.code
    if code == 3:
        where, frames = _debug_where(case, timeout)
        first = res.stderr.strip().splitlines()[0] if res.stderr.strip() else ""
        fails.append(Failure("exit 3", where, frames or first[:300]))
        return fails
    if code not in (0, 1, 2):
        fails.append(Failure(f"exit {code}", label, res.stderr.strip()[:300]))
        return fails
    if code == 2:
        lines = res.stderr.splitlines()
        if len(lines) != 1 or not lines[0].startswith("dpcost: error: "):
            shape = "no message" if not lines else ("several lines" if len(lines) > 1 else "not 'dpcost: error:'")
            fails.append(Failure("exit 2 message", f"{label}: {shape}", " | ".join(lines)[:300]))
        elif PYDANTIC_WORDING.search(lines[0]):
            fails.append(Failure("pydantic wording in an error", label, lines[0][:300]))
        return fails
    text_fmt = _text_format(case)
    if text_fmt is not None:
        fails.extend(check_text(_output_text(case, res), text_fmt, label))
    saved = _option(case.argv, "--save-topology")
    if case.words == ("calibrate",) and code == 0 and saved not in (None, "-") and Path(saved).is_file():
        topo, why = _parse(Path(saved).read_text(encoding="utf-8"), "yaml")
        fails.extend(check_document(topo, f"{label} --save-topology") if why is None else [])
        if why is not None:
            fails.append(Failure("unparsable output", f"{label} --save-topology: {why.partition(': ')[0]}", why))
    doc, why = _document(case, res)
    if why is not None:
        fails.append(Failure("unparsable output", f"{label}: {why.partition(': ')[0]}", why))
    if doc is not None:
        fails.extend(check_document(doc, label))
    failed_check = _verdict(case, doc) if doc is not None else None
    asked = case.words == ("check",) or (case.words == ("estimate",) and _has(case.argv, "--check"))
    if asked and failed_check is None and doc is None and why is None:
        failed_check = _verdict(case, _json_again(case, timeout))
    if code == 1:
        if not asked:
            fails.append(Failure("exit 1 with no check", label, res.stderr.strip()[:300]))
        elif failed_check is False:
            fails.append(Failure("exit 1 with no failed check", label, "the JSON says every check held"))
        elif failed_check is None and why is None:
            fails.append(Failure("exit 1 with no failed check", f"{label}: no verdict", "no JSON verdict to read"))
    elif code == 0 and asked and failed_check is True:
        fails.append(Failure("exit 0 with a failed check", label, "the JSON says a check failed"))
    junit = _option(case.argv, "--junit")
    wrote = not (_has(case.argv, "--help") or _has(case.argv, "--version"))  # --help prints and writes nothing
    if junit not in (None, "-") and code in (0, 1) and wrote and _is_file(junit):
        import xml.etree.ElementTree as ET

        try:
            ET.parse(junit)
        except ET.ParseError as exc:
            fails.append(Failure("malformed JUnit", label, str(exc)))
    return fails


# ------------------------------------------------------------------------------------------------ shrinking


def shrink(case: Case, key: tuple[str, str], timeout: float = TIMEOUT, budget: int = 200) -> Case:
    """Drop option groups (and the environment's extras) one at a time while the line still fails as `key`."""

    def still(c: Case) -> bool:
        fails = judge(c, run(c.argv, c.env, timeout), timeout)
        return any(f.key == key for f in fails)

    best = case
    tries = 0
    changed = True
    while changed and tries < budget:
        changed = False
        for j in range(len(best.groups)):
            trial = Case(best.index, best.words, best.groups[:j] + best.groups[j + 1 :], best.env, best.hostile)
            tries += 1
            if still(trial):
                best, changed = trial, True
                break
        if not changed:
            for k in [k for k in best.env if k != "COLUMNS" or best.env[k] != "100"]:
                env = {kk: vv for kk, vv in best.env.items() if kk != k}
                env.setdefault("COLUMNS", "100")
                trial = Case(best.index, best.words, best.groups, env, best.hostile)
                tries += 1
                if env != best.env and still(trial):
                    best, changed = trial, True
                    break
    return best


# ------------------------------------------------------------------------------------------------ the run


@dataclass
class Tally:
    codes: Counter[tuple[str, str]] = field(default_factory=Counter)  # (command, exit code) -> lines
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)  # failure class -> results
    examples: dict[tuple[str, str], list[tuple[Case, Failure]]] = field(default_factory=lambda: defaultdict(list))
    slowest: list[tuple[float, str]] = field(default_factory=list)
    params_used: Counter[tuple[str, str]] = field(default_factory=Counter)
    lines: int = 0
    busy: float = 0.0

    def add(self, case: Case, fails: list[Failure]) -> None:
        for f in fails:
            self.counts[f.key] += 1
            if len(self.examples[f.key]) < MAX_KEPT:
                self.examples[f.key].append((case, f))

    def merge(self, other: Tally) -> None:
        self.codes.update(other.codes)
        self.counts.update(other.counts)
        for k, v in other.examples.items():
            self.examples[k] = (self.examples.get(k, []) + v)[:MAX_KEPT]
        self.slowest = sorted(self.slowest + other.slowest, reverse=True)[:5]
        self.params_used.update(other.params_used)
        self.lines += other.lines
        self.busy += other.busy


def _used(case: Case, cmd: Command) -> Iterator[str]:
    tokens = set(case.argv)
    for p in cmd.params:
        names = p.opts + p.secondary
        given = any(n in tokens or any(t.startswith(n + "=") for t in tokens) for n in names if n.startswith("-"))
        argument = not any(o.startswith("-") for o in p.opts)
        if given or (argument and any(g and not g[0].startswith("-") for g in case.groups)):
            yield p.name


def run_range(gen: Generator, seed: int, indices: range | list[int], timeout: float = TIMEOUT) -> Tally:
    """Generate, run and judge lines `indices` of `seed`."""
    tally = Tally()
    by_words = {c.words: c for c in gen.cmds}
    out = gen.pools.work / "out"
    for i in indices:
        case = gen.case(seed, i)
        res = run(case.argv, case.env, timeout)
        fails = judge(case, res, timeout)
        code = "timeout" if res.timed_out else ("exception" if res.error else str(res.code))
        tally.codes[(case.label, code)] += 1
        tally.add(case, fails)
        for name in _used(case, by_words[case.words]):
            tally.params_used[(case.label, name)] += 1
        tally.slowest = sorted([*tally.slowest, (res.seconds, case.shell())], reverse=True)[:5]
        tally.lines += 1
        tally.busy += res.seconds
        for f in out.glob(f"{i}-*"):  # outputs are checked; keep the folder small
            if f.is_file():
                f.unlink()
    return tally


def setup(work: Path, seed: int) -> Generator:
    """The work folder (made files, outputs) and a generator over the app's real commands."""
    from dpcost.catalog import list_models, list_topologies

    (work / "out").mkdir(parents=True, exist_ok=True)
    pools = Pools(work, [m.name for m in list_models()], [t.name for t in list_topologies()])
    pools.bad = make_files(work, seed)
    return Generator(pools, commands())


_GEN: Generator | None = None  # the parent's generator, inherited by forked workers


def _worker(args: tuple[int, list[int], float, int]) -> Tally:
    seed, indices, timeout, job = args
    assert _GEN is not None
    cwd = _GEN.pools.work / f"cwd{job}"  # `models import` without --output writes NAME.yaml where it runs
    cwd.mkdir(exist_ok=True)
    os.chdir(cwd)
    return run_range(_GEN, seed, indices, timeout)


def fuzz(gen: Generator, n: int, seed: int, jobs: int = 1, timeout: float = TIMEOUT) -> Tally:
    """Run lines 0..n-1 of `seed` (in `jobs` forked processes) and tally them."""
    global _GEN
    here = os.getcwd()
    _GEN = gen
    try:
        if jobs <= 1:
            return _worker((seed, list(range(n)), timeout, 0))
        import multiprocessing

        chunks = [list(range(j, n, jobs)) for j in range(jobs)]
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            parts = pool.map(_worker, [(seed, c, timeout, j) for j, c in enumerate(chunks)])
        total = Tally()
        for part in parts:
            total.merge(part)
        return total
    finally:
        os.chdir(here)


def report(tally: Tally, cmds: list[Command], seconds: float, jobs: int, show: int, shrunk: dict[Any, Case]) -> str:
    """The summary: lines per command and exit code, coverage, the slowest lines, and each failure class."""
    lines = [
        f"{tally.lines:,} command lines in {seconds:.1f} s wall ({jobs} job(s); {tally.busy:.1f} s inside dpcost; "
        f"{tally.lines / max(seconds, 1e-9):.0f} lines/s)",
        "",
    ]
    codes = sorted({c for _, c in tally.codes}, key=lambda c: (not c.isdigit(), c))
    labels = sorted({lab for lab, _ in tally.codes})
    lines.append(f"{'command':<16}" + "".join(f"{'exit ' + c if c.isdigit() else c:>10}" for c in codes) + "     lines")
    for lab in [*labels, "all"]:
        row = [sum(v for (la, c), v in tally.codes.items() if c == code and lab in (la, "all")) for code in codes]
        lines.append(f"{lab:<16}" + "".join(f"{v:>10,}" for v in row) + f"{sum(row):>10,}")
    unused = [
        f"{c.label} {p.opts[0] if p.opts else p.name}"
        for c in cmds
        for p in c.params
        if (c.label, p.name) not in tally.params_used
    ]
    lines.append("")
    lines.append(
        f"parameters: {sum(len(c.params) for c in cmds)} across {len(cmds)} commands; "
        + (f"never drawn: {', '.join(unused)}" if unused else "every one drawn at least once")
    )
    lines.append("slowest lines:")
    lines.extend(f"  {t:6.2f} s  {line}" for t, line in tally.slowest[:3])
    lines.append("")
    if not tally.counts:
        lines.append(
            "no failures: 0 exit-3 results, 0 exit-1 results without a failed check, every JSON and YAML output "
            "finite and non-negative"
        )
    else:
        lines.append(f"{sum(tally.counts.values())} failure(s) in {len(tally.counts)} class(es):")
        for key, count in sorted(tally.counts.items(), key=lambda kv: (kv[0][0], -kv[1])):
            items = tally.examples[key]
            cases = sorted({c.index: c for c, _ in items}.values(), key=lambda c: len(c.shell()))
            lines.append(f"- {key[0]}: {key[1]}  ({count} line(s))")
            lines.append(f"    {items[0][1].message}")
            if key in shrunk:
                lines.append(f"    shortest: {shrunk[key].shell()}")
            for c in cases[:show]:
                lines.append(f"    line {c.index}: {c.shell()}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000, help="command lines to run (default 10,000)")
    ap.add_argument("--seed", type=int, default=0, help="the generator's seed (default 0)")
    ap.add_argument("--show", type=int, default=3, help="example lines printed per failure class (default 3)")
    ap.add_argument("--jobs", type=int, default=1, help="forked processes (default 1)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds one line may take (default 120)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder even when nothing failed")
    ap.add_argument("--no-shrink", action="store_true", help="do not shrink each failure class's shortest line")
    ap.add_argument("--lines", type=int, metavar="K", help="print the first K generated lines and exit")
    args = ap.parse_args(argv)
    os.environ.pop("DPCOST_DEBUG", None)
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
    work = Path(tempfile.mkdtemp(prefix="dpcost-fuzz-"))
    gen = setup(work, args.seed)
    if args.lines:
        for i in range(args.lines):
            print(gen.case(args.seed, i).shell())
        shutil.rmtree(work, ignore_errors=True)
        return 0
    t0 = time.perf_counter()
    tally = fuzz(gen, args.n, args.seed, args.jobs, args.timeout)
    seconds = time.perf_counter() - t0
    shrunk: dict[Any, Case] = {}
    if not args.no_shrink and tally.counts:
        here = os.getcwd()
        os.chdir(work / "cwd0")
        try:
            for key, items in tally.examples.items():
                shortest = min((c for c, _ in items), key=lambda c: len(c.shell()))
                shrunk[key] = shrink(shortest, key, args.timeout)
        finally:
            os.chdir(here)
    print(report(tally, gen.cmds, seconds, args.jobs, args.show, shrunk))
    if tally.counts or args.keep:
        print(f"\nwork folder kept: {work} (the files the lines name; files/MANIFEST says how each was changed)")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if tally.counts else 0


if __name__ == "__main__":
    sys.exit(main())
