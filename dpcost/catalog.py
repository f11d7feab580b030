"""The only module that reads files: catalog specs, user YAML, Hugging Face config.json, nccl-tests output.

A `--model`/`--topology` value that names an existing file is loaded from it; otherwise it is a catalog name.
The catalog ships inside the wheel (`dpcost/_data/{models,topologies}`, see pyproject's force-include) and
falls back to the checkout's top-level folders in an editable install.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from dpcost.errors import InputError, in_plain_words, nearest
from dpcost.specs import ModelSpec, TopologySpec

if TYPE_CHECKING:
    import yaml

    from dpcost.checks import PlanFile
    from dpcost.nccl_tests import Measurements

__all__ = [
    "catalog_dir",
    "list_models",
    "list_topologies",
    "load_measurements",
    "load_model",
    "load_plan",
    "load_runs",
    "load_topology",
    "model_from_hf_config",
    "names_a_file",
    "topology_yaml",
]

MAX_FILE_BYTES = 1 << 20  # specs are a few kB; refuse anything that could only be a mistake or an attack
# A Hugging Face config.json can carry a quantization_config listing every layer's modules (nvidia's MiniMax-M3-NVFP4:
# 3.1 MB), so its bound is wider; still one json.loads of a few MB.
MAX_CONFIG_BYTES = 16 << 20
# nccl-tests output under NCCL_DEBUG=INFO carries NCCL's own lines, a few hundred a rank (rings, trees, channels'
# connections): a 128-rank log is several MB, and so is a -J JSON with per-iteration times (-I 1).
MAX_MEASUREMENT_BYTES = 64 << 20
# what each kind of file may weigh, and why, for the refusal
_READ_LIMITS = {
    "spec": (MAX_FILE_BYTES, "specs are small YAML files"),
    "config": (MAX_CONFIG_BYTES, "a config.json, quantization settings and all, is a few MB"),
    "measurements": (MAX_MEASUREMENT_BYTES, "nccl-tests output, NCCL_DEBUG=INFO lines and all, is a few MB"),
}
Spec = TypeVar("Spec", bound=BaseModel)


def catalog_dir(kind: str) -> Path:
    """`models` or `topologies`: the packaged copy, else the checkout's top-level folder. Found beside this module,
    as PARSED_CATALOG is (dpcost is installed as files, never zipped): importlib.resources.files would import
    zipfile and its readers to get there, ~3 ms of every start."""
    packaged = Path(__file__).parent / "_data" / kind
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / kind


@cache
def _catalog_files(kind: str) -> dict[str, Path]:
    """The catalog's files by name, listed once per process (the catalog does not change under us)."""
    folder = catalog_dir(kind)
    if not folder.is_dir():
        return {}
    return {f.name[:-5]: f for f in folder.iterdir() if f.name.endswith(".yaml")}


# ------------------------------------------------------------------------------------------------ YAML


@cache
def _strict_loader() -> type[yaml.SafeLoader]:
    """SafeLoader without aliases (no billion-laughs expansion) and without silently repeated keys. Built on first
    use: PyYAML's import is ~40 ms of a start that reads only the pre-parsed catalog (_parsed_catalog)."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise yaml.YAMLError(
                    f"line {mark.line + 1}: anchors and aliases are not allowed (write each value out in full)"
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if not isinstance(key, str | int | float | bool) and key is not None:
                    raise yaml.YAMLError(f"line {line}: mapping keys must be plain names, not {type(key).__name__}s")
                if key in seen:
                    raise yaml.YAMLError(f"line {line}: key {key!r} appears twice")
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


def _read_text(source: Path, where: str, kind: str = "spec") -> str:
    """The file's text, refused past the limit for its kind (_READ_LIMITS: a spec, a Hugging Face config.json,
    nccl-tests measurements)."""
    limit, what = _READ_LIMITS[kind]
    try:
        with source.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(where, f"cannot read the file ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise InputError(where, f"file is larger than {limit // 1024} KiB; {what}")
    try:
        return data.decode("utf-8-sig")  # a byte-order mark, as spreadsheets write, is not part of the text
    except UnicodeDecodeError:
        raise InputError(where, "not a UTF-8 text file") from None


def _yaml_error(exc: yaml.YAMLError) -> str:
    """One short line: where the YAML breaks and what is wrong there, without the file's text (PyYAML's own
    message quotes the line with a caret under it)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is None or not problem:
        return "malformed YAML: " + " ".join(str(exc).replace('in "<unicode string>", ', "").split())[:200]
    said = f"malformed YAML at line {mark.line + 1}, column {mark.column + 1}: {' '.join(problem.split())[:120]}"
    context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and start is not None and (start.line, start.column) != (mark.line, mark.column):
        said += f" ({' '.join(context.split())[:60]} that starts at line {start.line + 1}, column {start.column + 1})"
    return said


def _parse_yaml(text: str, where: str) -> dict[str, Any]:
    import yaml

    try:
        doc = yaml.load(text, Loader=_strict_loader())
    except RecursionError:
        raise InputError(where, "YAML is nested too deeply") from None
    except yaml.YAMLError as exc:
        raise InputError(where, _yaml_error(exc)) from None
    except ValueError:  # e.g. an integer of thousands of digits (Python's int-string conversion limit)
        raise InputError(where, "a number in the file is too long to be a value") from None
    if not isinstance(doc, dict):
        got = "an empty file" if doc is None else f"a {type(doc).__name__}" if not isinstance(doc, str) else "text"
        raise InputError(where, f"expected a mapping of fields at the top, got {got}")
    return doc


def _fields_at(cls: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names allowed at `loc` inside `cls` (for 'unknown field' messages)."""
    current: Any = cls
    for part in loc:
        if isinstance(part, int) or not (isinstance(current, type) and issubclass(current, BaseModel)):
            continue
        field = current.model_fields.get(part)
        if field is None:
            break
        current = _model_in(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


_BOUNDS = {
    "greater_than_equal": "at least",
    "greater_than": "more than",
    "less_than_equal": "at most",
    "less_than": "less than",
}
_UNITS = {
    "bandwidth": " bytes/s",
    "hbm_bandwidth": " bytes/s",
    "hbm": " bytes",
    "bf16_dense": " FLOP/s",
    "fp8_dense": " FLOP/s",
    "ll": " s",
    "ll128": " s",
    "simple": " s",
    "latency": " s",
    "call_overhead": " s",
}


def _validate(cls: type[Spec], doc: dict[str, Any], where: str, context: dict[str, Any] | None = None) -> Spec:
    mixups = {ModelSpec: ("tiers", "gpu", "topology"), TopologySpec: ("architecture", "params", "model")}
    for kind, (*keys, other) in mixups.items():
        if cls is kind and any(k in doc for k in keys):
            raise InputError(
                where, f"this looks like a {other} spec, not a {'model' if kind is ModelSpec else 'topology'}"
            )
    try:
        return cls.model_validate(doc, context=context)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # a key spelt wrong is both unknown and, where it stood for a required one, that one missing: name it first
        err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        loc = tuple(err["loc"])
        field = ".".join(str(p) for p in loc)
        if err["type"] == "extra_forbidden":
            fields = _fields_at(cls, loc[:-1])
            near = nearest(str(loc[-1]), fields) if loc else []
            meant = f"did you mean {near[0]}? " if near else ""
            message = f"unknown field ({meant}allowed here: {', '.join(fields)})"
        elif err["type"] == "string_pattern_mismatch" and "x00" in str(err.get("ctx", {}).get("pattern", "")):
            message = "control characters are not allowed"
        elif err["type"] in _BOUNDS:
            limit = next(iter(err.get("ctx", {}).values()), "?")
            unit = _UNITS.get(str(loc[-1]), "") if loc else ""
            message = f"must be {_BOUNDS[err['type']]} {limit:g}{unit}, got {err['input']!r}"[:200]
        else:
            message = in_plain_words(err)
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InputError(where, f"{field}: {message}{more}" if loc else f"{message}{more}") from None


# ------------------------------------------------------------------------------------------------ specs


def _check_path(value: str, where: str) -> Path:
    if not value.strip():
        raise InputError(where, "empty value: give a catalog name or a file")
    path = Path(value)
    try:
        if path.is_dir():
            raise InputError(where, f"{value}: is a directory, not a spec file")
        if not path.is_file():
            raise InputError(where, f"{value}: no such file" if not path.exists() else f"{value}: not a regular file")
    except OSError as exc:  # a name too long for the file system, a path through a file, ...
        raise InputError(where, f"{value}: not a usable file name ({exc.strerror or exc})") from None
    except ValueError:  # a NUL byte
        raise InputError(where, "a file name cannot hold a NUL character") from None
    return path


def names_a_file(value: str) -> bool:
    """A --model or --topology value that can only be a file: a spec's suffix or a folder in it. A dot alone
    does not make a file: `qwen2.5-72b` is a catalog name."""
    return Path(value).suffix in (".yaml", ".yml", ".json") or "/" in value


def _is_path(value: str) -> bool:
    if not value.strip() or names_a_file(value):
        return True
    try:
        return Path(value).exists()
    except (OSError, ValueError):  # not a catalog name either: let _check_path say why
        return True


def load_model(value: str, where: str = "--model") -> ModelSpec:
    """A catalog name, a YAML spec file or a Hugging Face config.json."""
    if _is_path(value):
        path = _check_path(value, where)
        text = _read_text(path, str(path), "config" if path.suffix == ".json" else "spec")
        if path.suffix == ".json":
            return model_from_hf_config(_parse_json(text, str(path)), str(path))
        return _validate(ModelSpec, _parse_yaml(text, str(path)), str(path))
    return _load_named(ModelSpec, "models", value, where)


def load_topology(value: str, where: str = "--topology") -> TopologySpec:
    """A catalog name or a YAML spec file."""
    if _is_path(value):
        path = _check_path(value, where)
        return _validate(TopologySpec, _parse_yaml(_read_text(path, str(path)), str(path)), str(path))
    return _load_named(TopologySpec, "topologies", value, where)


PARSED_CATALOG = Path(__file__).with_name("_catalog.json")


@cache
def _parsed_catalog() -> dict[str, Any]:
    """The catalog's YAML, parsed and validated ahead (`python -m dpcost.catalog` writes it; tests/test_catalog.py
    holds it current): {kind: {name: [the file's text, its parsed mapping, the validated spec as JSON]}}, and under
    "specs.py" the checksum of the specs module that validated them. PyYAML's import and parse are ~50 ms of a
    start, JSON's well under 1 ms; validating a model and a topology builds their validators, ~20 ms, which
    `_shipped` skips. A spec whose text is not the one parsed here is parsed again, and one validated by another
    specs.py is validated again, so an edited catalog is never read stale."""
    try:
        parsed = json.loads(PARSED_CATALOG.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def write_parsed_catalog() -> Path:
    """Write _parsed_catalog's file from the catalog's YAML (what `python -m dpcost.catalog` runs)."""
    out: dict[str, Any] = {}
    for kind in ("models", "topologies"):
        out[kind] = {}
        for name, source in sorted(_catalog_files(kind).items()):
            label = f"{kind}/{name}.yaml"
            text = _read_text(source, label)
            doc = _parse_yaml(text, label)
            if json.loads(json.dumps(doc)) == doc:  # only what JSON carries unchanged (no dates, no int keys)
                spec = _validate(ModelSpec if kind == "models" else TopologySpec, doc, label)
                out[kind][name] = [text, doc, spec.model_dump(mode="json")]
    out["specs.py"] = _specs_checksum()
    PARSED_CATALOG.write_text(json.dumps(out, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return PARSED_CATALOG


@cache
def _load_named_cached(cls: type[BaseModel], kind: str, name: str) -> BaseModel:
    files = _catalog_files(kind)
    source = files[name]
    label = f"{kind}/{name}.yaml"
    text = _read_text(source, label)
    parsed = _parsed_catalog()
    known = parsed.get(kind, {}).get(name)
    if not (isinstance(known, list) and len(known) == 3 and known[0] == text):
        return _validate(cls, _parse_yaml(text, label), label)
    if parsed.get("specs.py") != _specs_checksum():
        return _validate(cls, known[1], label)
    return _shipped(cls, known[2], known[1])


@cache
def _specs_checksum() -> int | None:
    """CRC-32 of dpcost/specs.py as this process reads it (None where the source is not on disk)."""
    import zlib

    from dpcost import specs

    try:
        return zlib.crc32(Path(specs.__file__).read_bytes())
    except (OSError, TypeError):
        return None


def _shipped(cls: type[BaseModel], dump: dict[str, Any], doc: Any) -> BaseModel:
    """A spec that `write_parsed_catalog` validated, built again from its JSON without validating it a second time
    (pydantic's model_construct, level by level, each field taken back to its annotation's type); the fields set
    are those its YAML gave, as validation would have them. tests/test_catalog.py holds every shipped spec equal to
    its validated self."""
    given = {key for key in doc if key in cls.model_fields} if isinstance(doc, dict) else None
    values = {}
    for name, info in cls.model_fields.items():
        if name in dump:
            raw = doc.get(name) if isinstance(doc, dict) else None
            values[name] = _shipped_value(info.annotation, dump[name], raw)
    return cls.model_construct(given, **values)


def _shipped_value(annotation: Any, value: Any, doc: Any) -> Any:
    """`value`, a validated field as JSON carries it, as its annotation's Python type: models, tuples, lists and
    mappings of them; every other value JSON carries as validated (numbers, strings, literals)."""
    if value is None:
        return None
    origin = get_origin(annotation)
    if origin is Annotated:
        return _shipped_value(get_args(annotation)[0], value, doc)
    if origin in (Union, UnionType):
        arms = [arm for arm in get_args(annotation) if arm is not type(None)]
        return _shipped_value(arms[0], value, doc) if len(arms) == 1 else value
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _shipped(annotation, value, doc)
    if origin in (tuple, list):
        docs = doc if isinstance(doc, list) and len(doc) == len(value) else [None] * len(value)
        items = [_shipped_value(get_args(annotation)[0], v, d) for v, d in zip(value, docs, strict=True)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        return {key: _shipped_value(get_args(annotation)[1], v, None) for key, v in value.items()}
    return value


def _load_named(cls: type[Spec], kind: str, name: str, where: str) -> Spec:
    files = _catalog_files(kind)
    if name not in files:
        known = ", ".join(sorted(files)) or "(catalog not found)"
        noun = kind[:-1] if kind == "models" else "topology"
        raise InputError(where, f"unknown {noun} {name!r}; choose one of: {known}; or give a path to a YAML file")
    spec = _load_named_cached(cls, kind, name)
    assert isinstance(spec, cls)
    return spec


def list_models() -> list[ModelSpec]:
    return [_load_named(ModelSpec, "models", n, "models/") for n in sorted(_catalog_files("models"))]


def list_topologies() -> list[TopologySpec]:
    return [_load_named(TopologySpec, "topologies", n, "topologies/") for n in sorted(_catalog_files("topologies"))]


# ------------------------------------------------------------------------------------------------ HF config.json


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys say one thing each: a key given twice with the same value is one key, as json.load
    and transformers read it (inclusionAI/Ming-UniVision's config.json at 5b01ce5 repeats its auto_map); twice with
    two values, the file contradicts itself, where json.load would quietly take the last."""
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc and (type(doc[key]) is not type(value) or doc[key] != value):  # true is not 1
            raise ValueError(f"key {key!r} appears twice, with two values")
        doc[key] = value
    return doc


def _parse_json(text: str, where: str) -> dict[str, Any]:
    try:
        doc = json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise InputError(where, "malformed JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, a repeated key, an over-long number
        raise InputError(where, f"malformed JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict):
        raise InputError(where, "expected a JSON object (a Hugging Face config.json)")
    return doc


def model_from_hf_config(cfg: dict[str, Any], where: str = "config.json", name: str | None = None) -> ModelSpec:
    """Map a Hugging Face config.json to a ModelSpec: dispatch on model_type (else architectures), one key map
    per family following its transformers configuration_<family>.py defaults, nested text_config read for
    multimodal wrappers (Llama 4, Gemma 3)."""
    from dpcost.hf_config import architecture_of, in_users_words

    arch, keys, note = architecture_of(cfg, where)
    path = Path(where)
    raw_name = str(cfg.get("_name_or_path") or (path.parent.name if path.stem == "config" else path.stem) or "hf-model")
    raw_name = "".join(c for c in raw_name if c.isprintable())[:200] or "hf-model"
    slug = "".join(c if c.isalnum() or c in "._-" else "-" for c in raw_name.split("/")[-1].lower()) or "hf-model"
    source = f"{where} ({note})" if note else where
    doc = {
        "name": name or slug.strip("-._")[:64] or "hf-model",
        "title": raw_name,
        "source": source[:500],
        "architecture": {key: value for key, value in arch.items() if value is not None},
    }
    try:
        return _validate(ModelSpec, doc, where)
    except InputError as exc:
        raise InputError(where, in_users_words(exc.message, keys.used)) from None


def import_hf_config(path: str, name: str, output: str | None = None, force: bool = False) -> tuple[ModelSpec, str]:
    """`dpcost models import`: a config.json as a catalog spec (YAML). Returns the spec and where it went
    (`-` for the text itself, to print)."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", name):
        raise InputError("--name", f"{name!r}: use 1-64 lower-case letters, digits, '.', '_' or '-' (e.g. gemma-2-27b)")
    source = _check_path(path, "CONFIG")
    if source.suffix != ".json":
        raise InputError("CONFIG", f"{path}: expected a Hugging Face config.json")
    text = _read_text(source, str(source), "config")
    spec = model_from_hf_config(_parse_json(text, str(source)), str(source), name=name)
    import yaml

    doc = spec.model_dump(mode="json", exclude_defaults=True)
    doc["architecture"] = spec.architecture.model_dump(mode="json", exclude_defaults=True) if spec.architecture else {}
    text = (
        f"# {spec.title}, imported by `dpcost models import` from {source.name}.\n"
        "# Add `published: {total: ..., source: ...}` to have dpcost compare its count with the publisher's.\n"
        + yaml.safe_dump(doc, sort_keys=False, allow_unicode=False)
    )
    if output == "-":
        return spec, text
    target = Path(output or f"{name}.yaml")
    if target.exists() and not force:
        raise InputError("--output", f"{target}: exists; choose another file or pass --force")
    try:
        target.write_text(text)
    except OSError as exc:
        raise InputError("--output", f"{target}: cannot write ({exc.strerror or exc})") from None
    return spec, str(target)


# ------------------------------------------------------------------------------------------------ plan files


def load_plan(path: str, where: str = "PLAN") -> PlanFile:
    """`dpcost check PLAN`: a YAML (or JSON) plan file of named scenarios and their limits."""
    from dpcost.checks import PlanFile

    source = _check_path(path, where)
    text = _read_text(source, str(source))
    doc = _parse_json(text, str(source)) if source.suffix == ".json" else _parse_yaml(text, str(source))
    from dpcost.options import WRITTEN

    return _validate(PlanFile, doc, str(source), WRITTEN)


# ------------------------------------------------------------------------------------------------ measurements


def load_measurements(path: str, where: str = "--compare") -> Measurements:
    """An nccl-tests output log or -J JSON, or a CSV like tests/reference/nccl-tests/*.csv, holding one run."""
    runs = load_runs(path, where)
    if len(runs) > 1:
        raise InputError(path, "one file must describe one set of ranks (dpcost calibrate takes several)")
    return runs[0]


def load_runs(path: str, where: str) -> list[Measurements]:
    """Every run in an nccl-tests log, -J JSON or CSV (a CSV may hold several rank counts or forced algorithms).

    `where` is the flag that named the file, or the file itself (a positional argument): errors name it once.
    """
    from dpcost.nccl_tests import parse_runs

    try:
        p = _check_path(path, where)
    except InputError as exc:
        if where != path:
            raise
        raise InputError(path, exc.message.removeprefix(f"{path}: ")) from None
    text = _read_text(p, str(p), "measurements")
    try:
        return parse_runs(text, name=p.name)
    except ValueError as exc:
        raise InputError(str(p), str(exc)) from None


# ------------------------------------------------------------------------------------------------ writing specs

_UNIT_FIELDS = {
    "bandwidth": lambda v: f"{v / 1e9:.6g}GB/s",
    "hbm_bandwidth": lambda v: f"{v / 1e12:.6g}TB/s",
    "hbm": lambda v: f"{v / 1e9:.6g}GB",
    "bf16_dense": lambda v: f"{v / 1e12:.6g}TFLOPS",
    "fp8_dense": lambda v: f"{v / 1e12:.6g}TFLOPS",
    "call_overhead": lambda v: f"{v * 1e6:.6g}us",
    "hop_latency": lambda v: f"{v * 1e6:.6g}us",
    "reported_latency": lambda v: f"{v * 1e6:.6g}us",
    "latency": lambda v: f"{v * 1e6:.6g}us",
    "ll": lambda v: f"{v * 1e6:.6g}us",
    "ll128": lambda v: f"{v * 1e6:.6g}us",
    "simple": lambda v: f"{v * 1e6:.6g}us",
}


def _with_units(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        keep = key not in ("fitted", "error")  # the calibration record keeps SI numbers
        return {k: _with_units(v, k if keep else "") for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_with_units(v, key) for v in value]
    if isinstance(value, float) and key in _UNIT_FIELDS:
        return _UNIT_FIELDS[key](value)
    if isinstance(value, float):
        return float(f"{value:.6g}")
    return value


def topology_yaml(spec: TopologySpec, header: str = "") -> str:
    """A topology spec as YAML with unit strings, as the catalog's files are written; it loads back equal."""
    import yaml

    doc = _with_units(spec.model_dump(exclude_defaults=True))
    body = yaml.safe_dump(doc, sort_keys=False, width=120, allow_unicode=True)
    comments = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comments + body


if __name__ == "__main__":
    print(f"wrote {write_parsed_catalog()}")
