"""Every shipped spec loads and validates; user files and hostile input fail with one clear message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpcost.catalog import catalog_dir, list_models, list_topologies, load_model, load_topology
from dpcost.engine.params import count_params
from dpcost.engine.rates import rates_for
from dpcost.errors import InputError

MODELS = {
    "deepseek-v2-lite",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "qwen3-8b",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "llama-70b",
    "qwen-72b",
    "deepseek-v3",
    "deepseek-v4-flash",
    "llama-8b",
    "llama-405b",
    "llama2-70b",
    "qwen2.5-72b",
    "mixtral-8x7b",
    "gpt3-175b",
}
TOPOLOGIES = {"dgx-h100", "dgx-a100", "hgx-h200", "hgx-h800", "dgx-b200", "gb200-nvl72", "rack-pod-h100"}
TOPOLOGIES |= {"aws-p4de", "aws-p5", "gcp-a3-mega", "gcp-a3-ultra", "gcp-a4"}  # cloud instances (public specs)
TOPOLOGIES |= {"dgx-a100-40gb"}  # the DGX A100 320GB system's GPU on dgx-a100's fabric
TOPOLOGIES |= {"grand-teton-h100-96gb"}  # torchtitan's benchmark machines: the 96GB HBM2e H100 at 500 W
TOPOLOGIES |= {"gb300-nvl72", "dgx-b300"}  # Blackwell Ultra racks and nodes: datasheet figures, out of sample
TOPOLOGIES |= {"aws-p5en", "aws-p6-b200"}  # AWS H200 and B200 instances: public specs and their EFA tuner tables
TOPOLOGIES |= {"snellius-h100"}  # SURF Snellius gpu_h100: 4 x H100 per node, 4 x 200G IB, for its held-out runs


def test_the_gb300_topology_is_gb200s_rack_with_blackwell_ultra_and_800g_nics() -> None:
    """NVIDIA's GB300 NVL72: 360 PF FP8 and 180 PF BF16 dense per 72 GPUs, 8 TB/s each, one 800 Gb/s ConnectX-8 per
    GPU; the NVLink domain and its switches are GB200 NVL72's."""
    ultra, gb200 = load_topology("gb300-nvl72"), load_topology("gb200-nvl72")
    assert 72 * ultra.gpu.fp8_dense == pytest.approx(360e15) and 72 * ultra.gpu.bf16_dense == pytest.approx(180e15)
    assert ultra.gpu.hbm_bandwidth == 8e12 and ultra.gpu.hbm > gb200.gpu.hbm
    assert ultra.tiers[0] == gb200.tiers[0] and ultra.domain_size == 72
    assert [t.bandwidth for t in ultra.tiers[1:]] == [800e9 / 8] * 2


def test_the_b300_topology_is_dgx_b200s_node_with_blackwell_ultra_and_800g_nics() -> None:
    """NVIDIA's HGX B300 table: 36 PF BF16 and 72 PF FP8 with sparsity per 8 GPUs (half of it dense), 288 GB HBM3e
    at 8 TB/s each; DGX B300: 8 x 800 Gb/s ConnectX-8, Intel Xeon hosts; DGX SuperPOD B300: 64 nodes a scalable
    unit. The NVSwitch baseboard is dgx-b200's; Blackwell Ultra's attention and memory are gb300-nvl72's. The
    rate spread between busy GPUs is an 8-GPU board's, B200's (engine/rates.py), which the NVL72 tray does not set."""
    b300, b200, gb300 = load_topology("dgx-b300"), load_topology("dgx-b200"), load_topology("gb300-nvl72")
    assert 8 * 2 * b300.gpu.bf16_dense == pytest.approx(36e15) and 8 * 2 * b300.gpu.fp8_dense == pytest.approx(72e15)
    assert b300.gpu.hbm_bandwidth == 8e12 and b300.gpu.hbm == gb300.gpu.hbm > b200.gpu.hbm
    spread = {"node_drop", "gpu_spread"}
    assert b300.gpu.rates is not None and gb300.gpu.rates is not None and b300.gpu.sms == gb300.gpu.sms
    assert b300.gpu.rates.model_dump(exclude=spread) == gb300.gpu.rates.model_dump(exclude=spread)
    assert rates_for(b300.gpu).gpu_spread == rates_for(b200.gpu).gpu_spread > 0 == rates_for(gb300.gpu).gpu_spread
    assert b300.tiers[0] == b200.tiers[0] and b300.domain_size == 8 and b300.host_cpu == "intel"
    assert [t.bandwidth for t in b300.tiers[1:]] == [800e9 / 8] * 3 and b300.tiers[1].size == 64 * 8


def test_the_a100_40gb_topology_is_dgx_a100_with_the_40gb_parts_memory() -> None:
    """NVIDIA's A100 datasheet: the 40GB SXM4 part has 1,555 GB/s of HBM2 (the 80GB 2,039); CUDA reports it as
    39.59 GiB ("total capacity" in PyTorch's out-of-memory message). Node and fabric as dgx-a100."""
    small, large = load_topology("dgx-a100-40gb"), load_topology("dgx-a100")
    assert small.gpu.hbm_bandwidth == 1.555e12 and small.gpu.hbm == pytest.approx(39.59 * 2**30)
    assert small.tiers == large.tiers and small.gpu.bf16_dense == large.gpu.bf16_dense
    assert (small.call_overhead, small.scaling_loss, small.host_cpu) == (
        large.call_overhead,
        large.scaling_loss,
        large.host_cpu,
    )


def test_the_grand_teton_topology_is_rack_pod_h100_with_torchtitans_96gb_part() -> None:
    """torchtitan's benchmark file: Grand Teton hosts, H100 with 96GB HBM2e at 2.4 TB/s, 400 Gb/s RDMA per GPU; 95.04
    GiB as torchtitan's memory monitor states the device. Node and fabric as rack-pod-h100 (Meta's rack/pod design),
    the GH100 die's peaks and SMs unchanged."""
    teton, meta = load_topology("grand-teton-h100-96gb"), load_topology("rack-pod-h100")
    assert teton.gpu.hbm_bandwidth == 2.4e12 and teton.gpu.hbm == pytest.approx(95.04 * 2**30)
    assert teton.tiers == meta.tiers
    assert (teton.gpu.arch, teton.gpu.sms, teton.gpu.bf16_dense, teton.gpu.fp8_dense) == (
        meta.gpu.arch,
        meta.gpu.sms,
        meta.gpu.bf16_dense,
        meta.gpu.fp8_dense,
    )
    assert (teton.call_overhead, teton.scaling_loss, teton.host_cpu) == (
        meta.call_overhead,
        meta.scaling_loss,
        meta.host_cpu,
    )


def test_every_shipped_model_loads_and_counts() -> None:
    specs = list_models()
    assert {m.name for m in specs} == MODELS
    for spec in specs:
        assert spec.published is not None, spec.name
        assert count_params(spec).total > 1e9


def test_every_shipped_topology_loads_with_sources() -> None:
    specs = list_topologies()
    assert {t.name for t in specs} == TOPOLOGIES
    for t in specs:
        assert t.sources, f"{t.name} must say where its numbers come from"
        assert t.tiers[0].size is not None
        assert all(tier.effective_bandwidth > 0 for tier in t.tiers)


def test_an_installed_package_reads_its_own_catalog() -> None:
    """After a plain `pip install .`, the catalog comes from the wheel (dpcost/_data), not from a checkout."""
    import dpcost

    package = Path(dpcost.__file__).parent
    if "site-packages" in package.parts:
        assert Path(str(catalog_dir("models"))) == package / "_data" / "models"
    assert len([f for f in catalog_dir("models").iterdir() if f.name.endswith(".yaml")]) == len(MODELS)
    assert len([f for f in catalog_dir("topologies").iterdir() if f.name.endswith(".yaml")]) == len(TOPOLOGIES)


def test_the_parsed_catalog_holds_every_spec_as_pyyaml_reads_it() -> None:
    """dpcost/_catalog.json (read instead of parsing YAML at start-up) holds each catalog file's exact text and
    the mapping PyYAML parses from it. If this fails: python -m dpcost.catalog."""
    import yaml

    from dpcost.catalog import _parsed_catalog

    parsed = _parsed_catalog()
    for kind in ("models", "topologies"):
        files = {f.name[:-5]: f for f in catalog_dir(kind).iterdir() if f.name.endswith(".yaml")}
        assert sorted(parsed.get(kind, {})) == sorted(files), "stale: run python -m dpcost.catalog"
        for name, source in files.items():
            text, doc, _ = parsed[kind][name]
            assert text == source.read_text(encoding="utf-8"), f"{kind}/{name}.yaml changed: python -m dpcost.catalog"
            assert doc == yaml.safe_load(text)


def _fields_set(spec: object) -> object:
    """Every level's fields set, as validation records them."""
    from pydantic import BaseModel

    if isinstance(spec, BaseModel):
        return (sorted(spec.model_fields_set), {k: _fields_set(getattr(spec, k)) for k in type(spec).model_fields})
    if isinstance(spec, list | tuple):
        return [_fields_set(v) for v in spec]
    return None


def test_a_shipped_spec_is_the_spec_its_yaml_validates_to() -> None:
    """Start-up reads a catalog spec from the JSON of its validated self without validating it again: built so, each
    is equal to what pydantic validates from its YAML, field by field and level by level, with the same fields set,
    and dumps to the same JSON. If this fails: python -m dpcost.catalog."""
    from dpcost.catalog import _parsed_catalog, _shipped, _specs_checksum, _validate
    from dpcost.specs import ModelSpec, TopologySpec

    parsed = _parsed_catalog()
    assert parsed["specs.py"] == _specs_checksum(), "specs.py changed: python -m dpcost.catalog"
    for kind, cls in (("models", ModelSpec), ("topologies", TopologySpec)):
        for name, (_, doc, dump) in parsed[kind].items():
            validated, shipped = _validate(cls, doc, name), _shipped(cls, dump, doc)
            assert type(shipped) is cls and shipped == validated, name
            assert _fields_set(shipped) == _fields_set(validated), name
            assert shipped.model_dump_json() == validated.model_dump_json(), name


def test_a_catalog_validated_by_another_specs_module_is_validated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """specs.py edited since the catalog was written: its specs are validated from their YAML, never built stale."""
    import dpcost.catalog as catalog

    calls: list[str] = []
    real = catalog._validate
    monkeypatch.setattr(catalog, "_specs_checksum", lambda: -1)
    monkeypatch.setattr(
        catalog, "_validate", lambda cls, doc, where, context=None: calls.append(where) or real(cls, doc, where)
    )
    catalog._load_named_cached.cache_clear()
    try:
        assert load_model("llama-8b").architecture is not None
        assert calls == ["models/llama-8b.yaml"]
    finally:
        catalog._load_named_cached.cache_clear()


def test_a_spec_edited_since_it_was_parsed_is_read_from_its_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog file whose text is not the pre-parsed one (edited in a checkout) is parsed again, never read stale."""
    import dpcost.catalog as catalog

    stale = {"models": {"llama-8b": ["an older text", {"name": "llama-8b", "title": "stale", "params": 1}]}}
    monkeypatch.setattr(catalog, "_parsed_catalog", lambda: stale)
    catalog._load_named_cached.cache_clear()
    try:
        assert load_model("llama-8b").title != "stale"
        assert load_model("llama-8b").architecture is not None
    finally:
        catalog._load_named_cached.cache_clear()


def test_a_catalog_estimate_does_not_import_pyyaml() -> None:
    """Start-up: a catalog model and topology come from the pre-parsed JSON, so PyYAML (~40 ms) is not imported."""
    import subprocess
    import sys

    code = (
        "import sys; from dpcost import Options, estimate, load_model, load_topology; "
        "estimate(load_model('llama-70b'), load_topology('dgx-h100'), Options(dp=64)); "
        "print('yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_catalog_file_names_match_their_names() -> None:
    for kind in ("models", "topologies"):
        for f in catalog_dir(kind).iterdir():
            if f.name.endswith(".yaml"):
                assert f.name[:-5] in MODELS | TOPOLOGIES


def test_default_topology_shape(h100) -> None:  # type: ignore[no-untyped-def]
    assert h100.gpu.hbm == pytest.approx(79.11 * 2**30)  # what CUDA reports (docs/sources/gpu-memory.md), not 80e9
    assert h100.tiers[0].size == 8 and h100.tiers[0].bandwidth == 450e9
    assert h100.tiers[1].size == 256 and h100.tiers[1].bandwidth == 50e9
    assert h100.tiers[0].in_network_reduction is not None


def test_oversubscribed_example_exists() -> None:
    pod = load_topology("rack-pod-h100")
    assert max(t.oversubscription for t in pod.tiers) == 7
    assert any(t.in_network_reduction for t in load_topology("gb200-nvl72").tiers)
    assert load_topology("gb200-nvl72").domain_size == 72


def test_unknown_names_list_the_catalog() -> None:
    with pytest.raises(InputError, match="unknown model 'llama-7b'; choose one of: deepseek-v2-lite, deepseek-v3") as e:
        load_model("llama-7b")
    assert e.value.where == "--model"
    with pytest.raises(InputError, match="unknown topology 'dgx-h900'"):
        load_topology("dgx-h900")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_model(str(tmp_path / "nope.yaml"))


def _write(tmp_path: Path, text: str, name: str = "spec.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


GOOD_MODEL = "name: tiny\ntitle: Tiny\narchitecture: {hidden: 256, layers: 2, heads: 4, ffn: 1024, vocab: 1000}\n"


def test_user_yaml_model(tmp_path: Path) -> None:
    spec = load_model(_write(tmp_path, GOOD_MODEL))
    assert spec.name == "tiny"
    assert count_params(spec).total == 2 * (4 * 256 * 256 + 3 * 256 * 1024 + 2 * 256) + 2 * 1000 * 256 + 256


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: [unclosed", "malformed YAML"),
        ("- a\n- b\n", "expected a mapping"),
        ("a: &x [1]\nb: *x\n", "aliases are not allowed"),
        ("name: a\nname: b\n", "appears twice"),
        (
            "name: tiny\ntitle: T\narchitecture: {hidden: -5, layers: 2, heads: 4, ffn: 8, vocab: 9}\n",
            "architecture.hidden: must be more than 0, got -5",
        ),
        (
            "name: tiny\ntitle: T\narchitecture: {hidden: 256, layers: 2, heads: 4, ffn: 8, vocab: 9, colour: red}\n",
            r"architecture.colour: unknown field \(allowed here: hidden, layers",
        ),
        ("name: tiny\ntitle: T\n", "give an architecture or params"),
        (
            "name: tiny\ntitle: T\narchitecture: {hidden: 256, layers: 2, heads: 4, kv_heads: 3, ffn: 8, vocab: 9}\n",
            "must be a multiple of kv_heads",
        ),
        ("name: Not A Slug\ntitle: T\nparams: 7B\n", "name: must match the pattern"),
        ("name: t\ntitle: T\nparams: 7 apples\n", "params: expected a count"),
        ("[" * 5000, "nested too deeply|malformed"),
        ("? [a, b]\n: 1\nname: x\n", "mapping keys must be plain names"),
        ("name: t\ntitle: T\nparams: " + "9" * 5000 + "\n", "too long to be a value"),
        ("name: t\ntitle: T\nparams: 1e300T\n", "params: count '1e300T' is beyond 10000T"),
        (
            "name: t\ntitle: T\narchitecture: {hidden: 8, layers: 1000000000, heads: 1, ffn: 8, vocab: 9}\n",
            "architecture.layers: must be at most 100000",
        ),
        ('name: t\ntitle: "bad\\x1b[31m"\nparams: 7B\n', "title: control characters are not allowed"),
        ("name: t\ntitle: T\ngpu: {}\ntiers: []\n", "this looks like a topology spec, not a model"),
    ],
)
def test_bad_model_files_say_field_and_fix(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError, match=message) as e:
        load_model(path)
    assert e.value.where == path
    assert "\n" not in str(e.value)


def test_a_log_given_as_a_plan_is_refused_in_one_short_line_without_its_text(tmp_path: Path) -> None:
    """`dpcost check some.log`: the file, where the YAML breaks and what is wrong, not the file's lines."""
    from typer.testing import CliRunner

    from dpcost.cli import app

    log = tmp_path / "some.log"
    log.write_text((Path(__file__).parent / "reference/nccl-tests/h200-2n-all_reduce-ocih200.log").read_text())
    result = CliRunner().invoke(app, ["check", str(log)], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 2 and result.stdout == ""
    where = "malformed YAML at line 35, column 3"
    assert result.stderr == f"dpcost: error: {log}: {where}: expected '<document start>', but found '<scalar>'\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: [tiny, 8\ntitle: T\n",
            "malformed YAML at line 2, column 6: expected ',' or ']', but got ':' "
            "(while parsing a flow sequence that starts at line 1, column 7)",
        ),
        (
            "name: t\n\ttitle: T\n",
            "malformed YAML at line 2, column 1: found character '\\t' that cannot start any token",
        ),
        ("name: t\ntitle: T: U\n", "malformed YAML at line 2, column 9: mapping values are not allowed here"),
    ],
)
def test_a_yaml_syntax_error_says_line_column_and_what(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as e:
        load_model(path)
    assert e.value.message == message
    assert "^" not in message and "tiny" not in message and "title" not in message


def test_billion_laughs_is_refused_fast(tmp_path: Path) -> None:
    lol = ["a: &a [x, x, x, x, x, x, x, x, x]"] + [
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}]" for i in range(9)
    ]
    with pytest.raises(InputError, match="aliases"):
        load_model(_write(tmp_path, "\n".join(lol)))


def test_oversized_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="larger than"):
        load_model(_write(tmp_path, "#" * (2 << 20)))
    p = tmp_path / "bin.yaml"
    p.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="UTF-8"):
        load_model(str(p))


def test_bad_topology_units_and_tiers(tmp_path: Path) -> None:
    base = load_topology("dgx-h100").model_dump(mode="json")
    import yaml

    bad = json.loads(json.dumps(base))
    bad["tiers"][0]["bandwidth"] = "450 furlongs"
    with pytest.raises(InputError, match=r"tiers.0.bandwidth: expected a bandwidth such as '450GB/s'"):
        load_topology(_write(tmp_path, yaml.safe_dump(bad)))
    bad = json.loads(json.dumps(base))
    bad["tiers"][1]["size"] = 12
    with pytest.raises(InputError, match="must be a larger multiple of 8"):
        load_topology(_write(tmp_path, yaml.safe_dump(bad)))
    bad = json.loads(json.dumps(base))
    bad["tiers"][1]["in_network_reduction"] = {"kind": "nvls", "efficiency": 0.5, "latency": "25us"}
    with pytest.raises(InputError, match="nvls belongs to the first"):
        load_topology(_write(tmp_path, yaml.safe_dump(bad)))
    bad = json.loads(json.dumps(base))
    bad["tiers"][1]["in_network_reduction"] = {
        "kind": "sharp",
        "efficiency": 0.9,
        "latency": "25us",
        "loss_per_doubling": 0.05,
    }
    with pytest.raises(InputError, match="loss_per_doubling applies to nvls only"):
        load_topology(_write(tmp_path, yaml.safe_dump(bad)))


def test_topology_roundtrip_through_yaml(tmp_path: Path) -> None:
    import yaml

    base = load_topology("dgx-h100")
    again = load_topology(_write(tmp_path, yaml.safe_dump(base.model_dump(mode="json"))))
    assert again == base


HF_LLAMA = {
    "model_type": "llama",
    "hidden_size": 8192,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "intermediate_size": 28672,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
    "_name_or_path": "meta-llama/Llama-3.1-70B",
}
HF_DEEPSEEK = {
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "tie_word_embeddings": False,
    "topk_method": "noaux_tc",
    "num_nextn_predict_layers": 1,
    "hidden_act": "silu",
}


@pytest.mark.parametrize(("config", "catalog"), [(HF_LLAMA, "llama-70b"), (HF_DEEPSEEK, "deepseek-v3")])
def test_hf_config_counts_like_the_catalog(tmp_path: Path, config: dict, catalog: str) -> None:  # type: ignore[type-arg]
    spec = load_model(_write(tmp_path, json.dumps(config), "config.json"))
    ours, theirs = count_params(spec), count_params(load_model(catalog))
    assert ours.total == theirs.total
    assert ours.active == theirs.active


@pytest.mark.parametrize(
    "name",
    ["qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-20b", "gpt-oss-120b", "deepseek-v2-lite"],
)
def test_a_catalog_model_is_its_published_config(name: str) -> None:
    """Each catalog Qwen3, gpt-oss and DeepSeek-V2-Lite is the model its published config.json builds
    (tests/reference/hf-configs), shape for shape, and so counts what its checkpoint holds (the Hub's safetensors
    totals, that README's exact counts), or its card's total within 0.5% where no exact count is stored."""
    config = Path(__file__).parent / "reference" / "hf-configs" / f"{name}.json"
    ours, theirs = load_model(name), load_model(str(config))
    assert ours.architecture == theirs.architecture
    checkpoint = {"qwen3-8b": 8_190_735_360, "qwen3-32b": 32_762_123_264, "qwen3-30b-a3b": 30_532_122_624,
                  "qwen3-235b-a22b": 235_093_634_560, "gpt-oss-20b": 20_914_757_184,
                  "gpt-oss-120b": 116_829_156_672}  # fmt: skip
    if name in checkpoint:
        assert count_params(ours).total == checkpoint[name]
    else:
        assert count_params(ours).total == pytest.approx(15.7e9, rel=0.005)  # DeepSeek-V2-Lite's card


def test_hf_qwen1_config_halves_its_fused_mlp_width(tmp_path: Path) -> None:
    qwen1 = {
        "model_type": "qwen",
        "hidden_size": 8192,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "intermediate_size": 49152,
        "vocab_size": 152064,
        "tie_word_embeddings": False,
    }
    spec = load_model(_write(tmp_path, json.dumps(qwen1), "config.json"))
    assert count_params(spec).total == count_params(load_model("qwen-72b")).total


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({**HF_LLAMA, "tie_word_embeddings": "false"}, "tie_word_embeddings: expected true or false"),
        ({**HF_LLAMA, "intermediate_size": "abc"}, "intermediate_size: expected a whole number"),
        ({**HF_LLAMA, "num_key_value_heads": 0}, "num_key_value_heads: must be more than 0"),
        ({**HF_LLAMA, "_name_or_path": "evil\x1b[31mred"}, None),
    ],
)
def test_hf_config_types_are_strict(tmp_path: Path, config: dict, message: str | None) -> None:  # type: ignore[type-arg]
    path = _write(tmp_path, json.dumps(config), "config.json")
    if message is None:
        assert "\x1b" not in load_model(path).title
        return
    with pytest.raises(InputError, match=message):
        load_model(path)


def test_hf_config_repeated_keys(tmp_path: Path) -> None:
    """A key given twice with two values is refused (json.load would take the last); twice with one value it is one
    key, as json.load and transformers read it (Ming-UniVision's published file repeats its auto_map)."""
    with pytest.raises(InputError, match="appears twice, with two values"):
        load_model(_write(tmp_path, '{"hidden_size": 8, "hidden_size": 9}', "config.json"))
    with pytest.raises(InputError, match="appears twice, with two values"):
        load_model(_write(tmp_path, '{"tie_word_embeddings": 1, "tie_word_embeddings": true}', "one.json"))
    same = _write(tmp_path, '{"model_type": "llama", "hidden_size": 64, "hidden_size": 64, "num_hidden_layers": 2, '
                  '"num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}', "twice.json")  # fmt: skip
    a = load_model(same).architecture
    assert a is not None and a.hidden == 64


def test_paths_that_are_not_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        load_model(str(tmp_path))
    with pytest.raises(InputError, match="empty value"):
        load_topology("")


def test_hf_config_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="hidden_size: required field is missing"):
        load_model(_write(tmp_path, json.dumps({"model_type": "llama"}), "config.json"))
    with pytest.raises(InputError, match="malformed JSON"):
        load_model(_write(tmp_path, "{", "config.json"))


def test_a_config_json_may_carry_megabytes_of_quantization_settings(tmp_path: Path) -> None:
    """nvidia's MiniMax-M3-NVFP4 config.json is 3.1 MB, almost all of it quantization_config's per-module lists: a
    config.json is read up to MAX_CONFIG_BYTES (16 MiB), a YAML spec only up to 1 MiB."""
    cfg = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
           "num_attention_heads": 32, "vocab_size": 32000,
           "quantization_config": {"ignore": [f"model.layers.{i}.mlp.experts.{j}" for i in range(32)
                                              for j in range(3000)]}}  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert (1 << 20) < path.stat().st_size < (16 << 20)
    assert load_model(str(path)).architecture is not None
    path.write_text(" " * (17 << 20))
    with pytest.raises(InputError, match=r"larger than 16384 KiB; a config\.json"):
        load_model(str(path))


def test_a_misspelt_key_is_named_before_the_required_one_it_hid(tmp_path: Path) -> None:
    """`kv_head` for `kv_heads` is an unknown key; `title` is missing too: the unknown key is the likelier mistake,
    so it is the one named, with the nearest allowed name."""
    text = "name: x\narchitecture:\n  hidden: 4096\n  layers: 32\n  heads: 32\n  kv_head: 8\n  vocab: 32000\n"
    with pytest.raises(InputError, match=r"architecture\.kv_head: unknown field \(did you mean kv_heads\?"):
        load_model(_write(tmp_path, text))
