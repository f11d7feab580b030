"""Parameter counts derived from the architecture against published figures (docs/sources/models.md)."""

from __future__ import annotations

import pytest
from conftest import read_reference_csv

from dpcost.catalog import list_models, load_model
from dpcost.engine.params import count_params


@pytest.mark.parametrize("spec", list_models(), ids=lambda s: s.name)
def test_total_within_half_a_percent_of_published(spec) -> None:  # type: ignore[no-untyped-def]
    derived = count_params(spec).total
    assert derived == pytest.approx(spec.published.total, rel=0.005)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("llama-8b", 8.030e9),
        ("llama-70b", 70.554e9),
        ("llama-405b", 405.853e9),
        ("llama2-70b", 68.977e9),
        ("qwen-72b", 72.288e9),
        ("qwen2.5-72b", 72.706e9),
        ("mixtral-8x7b", 46.703e9),
        ("gpt3-175b", 174.6e9),
    ],
)
def test_counts_match_the_config_counts_in_models_md(name: str, expected: float) -> None:
    assert count_params(load_model(name)).total == pytest.approx(expected, rel=5e-4)


def test_llama_70b_exactly() -> None:
    # 80 x (attention 150,994,944 + MLP 704,643,072 + 2 norms) + 2 x embedding + final norm
    per_layer = 8192 * 8192 * 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192
    assert count_params(load_model("llama-70b")).total == 80 * per_layer + 2 * 128256 * 8192 + 8192


def test_mixtral_active_within_half_a_percent() -> None:
    c = count_params(load_model("mixtral-8x7b"))
    assert c.active == pytest.approx(12.9e9, rel=0.005)
    assert c.active == pytest.approx(12.880e9, rel=5e-4)


def test_deepseek_v3_main_model_and_mtp() -> None:
    spec = load_model("deepseek-v3")
    c = count_params(spec)
    assert c.total == pytest.approx(671e9, rel=0.005)  # main model, MTP module excluded
    # DeepSeek says 37B (report) and 36.7B (README_WEIGHTS.md) activated; the config's shapes give 37.55B.
    # Our count is held to that derivation, between the two published figures' reach:
    assert c.active == pytest.approx(37.55e9, rel=1e-3)
    assert 36.7e9 < c.active < 37.6e9
    # MTP: one more MoE block plus eh_proj; DeepSeek: 11.5B unique parameters.
    assert c.mtp == pytest.approx(11.5e9, rel=0.015)
    assert c.largest_block > 11e9  # a whole MoE block: 257 experts


def test_seed_gradient_volume_table() -> None:
    """The seed's |theta| x dtype table: bf16 within 1% of 140 GB, 144 GB, 1.34 TB; fp32 twice that."""
    for row in read_reference_csv("seed-gradient-volumes.csv"):
        total = count_params(load_model(row["model"])).total
        assert 2 * total == pytest.approx(float(row["bf16_grad_bytes"]), rel=0.01), row["model"]
        assert 4 * total == pytest.approx(float(row["fp32_grad_bytes"]), rel=0.01), row["model"]


def test_moe_active_below_total_dense_equal() -> None:
    for spec in list_models():
        c = count_params(spec)
        a = spec.architecture
        if a is not None and a.moe is not None:
            assert c.active < c.total / 3
        else:
            assert c.active == c.total
