"""Shared fixtures: the catalog specs and the repo's copy of the public reference data."""

from __future__ import annotations

import csv
import functools
import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import pytest

from dpcost.catalog import load_model, load_topology
from dpcost.engine.step import StepPlan, Unit
from dpcost.specs import ModelSpec, TopologySpec

REFERENCE = Path(__file__).parent / "reference"
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
HF_RESOLVED = REFERENCE / "hf-configs" / "resolved"


def load_benchmark(name: str) -> ModuleType:
    """A script of benchmarks/ (not a package) as a module, registered so that its dataclasses find it."""
    spec = importlib.util.spec_from_file_location(f"{name}_benchmark", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@functools.cache
def _transformers_cases() -> tuple[dict, ...]:  # type: ignore[type-arg]
    return tuple(c["config"] for c in json.loads((HF_RESOLVED / "transformers-5.25.json").read_text())["cases"])


def transformers_cases(model_type: str) -> list[dict]:  # type: ignore[type-arg]
    """The configs resolved/transformers-5.25.json holds for `model_type`, in its order (each as the class writes it,
    with the parameters transformers builds beside it there)."""
    return [cfg for cfg in _transformers_cases() if cfg["model_type"] == model_type]


def family_configs(families: Iterable[str]) -> dict[str, dict | None]:  # type: ignore[type-arg]
    """A config.json for each model type: transformers' class defaults where resolved/transformers-5.25.json holds
    them, else a real config of that type (its own or its text model's) from tests/reference/hf-configs/, else
    None."""
    real: dict[str | None, dict] = {}  # type: ignore[type-arg]
    for path in sorted((REFERENCE / "hf-configs").glob("*.json")):
        cfg = json.loads(path.read_text())
        for model_type in (cfg.get("model_type"), (cfg.get("text_config") or {}).get("model_type")):
            real.setdefault(model_type, cfg)
    return {family: (transformers_cases(family) or [real.get(family)])[0] for family in families}


def spec_from_config(tmp_path: Path, cfg: dict) -> ModelSpec:  # type: ignore[type-arg]
    """`cfg` written as a config.json and read as dpcost reads a user's file."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return load_model(str(path))


def estimate_refusal(tmp_path: Path, cfg: dict, *flags: str) -> str:  # type: ignore[type-arg]
    """`dpcost estimate --dp 8` on `cfg` written as a config.json, with `flags`: its one-line error, which it must
    exit with code 2 (bad input)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, _, err = run_cli("estimate", "--model", str(path), "--dp", "8", *flags)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    return err


def read_reference_csv(name: str) -> list[dict[str, str]]:
    """A reference CSV without its '#' provenance lines."""
    lines = [ln for ln in (REFERENCE / name).read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    return list(csv.DictReader(lines))


@pytest.fixture(scope="session")
def h100() -> TopologySpec:
    return load_topology("dgx-h100")


@pytest.fixture(scope="session")
def llama70b() -> ModelSpec:
    return load_model("llama-70b")


def step_plan(**kw: object) -> StepPlan:
    """A ZeRO-3 step of 10 equal units (1 s forward, 2 s backward) on 512 ranks, for step.py's schedule tests;
    `kw` overrides any field."""
    base: dict[str, object] = dict(
        stage=3,
        accumulation=1,
        forward=1.0,
        backward=2.0,
        units=tuple(Unit(1e9, 1 / 10) for _ in range(10)),
        grad_bytes=4.0,
        weight_bytes=2.0,
        bucket_bytes=25 * 2**20,
        ranks=512,
    )
    base.update(kw)
    return StepPlan(**base)  # type: ignore[arg-type]


def run_cli(*args: str) -> tuple[int, str, str]:
    """dpcost's command line in-process: (exit code, stdout, stderr)."""
    from typer.testing import CliRunner

    from dpcost.cli import app

    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def cli_report(*args: str) -> dict:  # type: ignore[type-arg]
    """A command's JSON document; the command must succeed."""
    import json

    code, out, err = run_cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def cli_in_fresh_process(args: list[str], module: str, env: dict[str, str] | None = None) -> tuple[str, bool]:
    """`dpcost ARGS` in a new interpreter, its output piped: what it printed, and whether it imported `module`."""
    code = (
        "import sys\n"
        "from dpcost.cli import main\n"
        f"sys.argv = ['dpcost', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print({module!r} in sys.modules, file=sys.stderr)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **(env or {})}
    )
    assert run.stderr.strip(), run.stderr
    return run.stdout, run.stderr.strip().splitlines()[-1] == "True"
