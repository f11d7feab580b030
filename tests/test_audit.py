"""The accounting bugs the issue #11 audit found, and invariants over the catalog that would have caught them."""

from __future__ import annotations

import pytest

from dpcost.catalog import list_models, load_model, load_topology
from dpcost.engine.checkpointing import RECOMPUTE
from dpcost.engine.compute import attention_flops
from dpcost.engine.estimate import estimate, memory_by_stage
from dpcost.engine.memory import RECIPES, model_states
from dpcost.engine.params import count_params
from dpcost.engine.serving import decode_flops_per_token, decode_weight_bytes
from dpcost.errors import InputError
from dpcost.options import Options
from dpcost.specs import ModelSpec

H100 = load_topology("dgx-h100")
MODELS = [m for m in list_models() if m.architecture is not None]


def test_megatron_bf16_grads_keep_the_fp32_main_grad_shard() -> None:
    """Megatron-LM docs (distributed optimizer): bf16 grads cost 20 bytes per parameter, or 4 + 16/d sharded."""
    from dpcost.engine.prepare import recipe_for

    recipe = recipe_for("megatron", "bf16")
    for d in (1, 8, 64):
        assert model_states(1e9, d, 0, recipe).total == pytest.approx(20e9)
        assert model_states(1e9, d, 1, recipe).total == pytest.approx((4 + 16 / d) * 1e9)
    fp32 = recipe_for("megatron", "fp32")
    assert model_states(1e9, 8, 1, fp32).total == pytest.approx((6 + 12 / 8) * 1e9)
    assert RECIPES["megatron"].components  # unchanged base recipe


def test_keep_full_grads_at_zero_3_says_gathers_run_every_micro_batch() -> None:
    r = estimate(load_model("llama-8b"), H100, Options(dp=64, zero=3, accumulation=4, keep_full_grads=True))
    assert "every micro-batch" in r.communication.frequency
    assert not r.communication.frequency.startswith("once per step")


def test_zero_0_out_of_memory_hint_names_the_stage_that_fits() -> None:
    r = estimate(load_model("llama-8b"), H100, Options(dp=64, zero=0, recompute="full"))
    oom = [w.message for w in r.warnings if w.code == "oom"]
    assert oom and "TP/PP/EP" not in oom[0]
    assert "ZeRO-1" in oom[0] or "ZeRO-2" in oom[0]


def test_decode_flops_are_two_per_active_weight_plus_attention_over_the_context() -> None:
    """Each new token multiplies every active weight once (the tied output projection included, the embedding
    lookup not) and attends to the whole context: 2 N + 2 L H (d_qk + d_v) T."""
    for spec in MODELS:
        a = spec.architecture
        assert a is not None
        if a.local_attention is not None:  # a window's decode reads the window (test_deepseek_v4.py)
            continue
        c = count_params(spec)
        head = c.embedding if a.tied_embeddings else 0.0
        expected = 2 * (c.active_excl_embedding + head) + attention_flops(a, 4096)
        assert decode_flops_per_token(c, a, 4096) == pytest.approx(expected), spec.name


def test_decode_reads_the_embedding_table_only_as_a_tied_head() -> None:
    llama = load_model("llama-8b")
    c = count_params(llama)
    assert decode_weight_bytes(c, llama.architecture, 1) == pytest.approx(2 * (c.total - c.embedding))
    gpt3 = load_model("gpt3-175b")
    g = count_params(gpt3)
    assert decode_weight_bytes(g, gpt3.architecture, 1) == pytest.approx(2 * (g.total - g.positions))


def test_memory_and_estimate_default_to_the_same_recomputation() -> None:
    """llama-70b at 512: estimate picks per-op SAC and fits; memory must not say nothing fits."""
    model = load_model("llama-70b")
    report = estimate(model, H100, Options(dp=512))
    memory = memory_by_stage(model, H100, Options(dp=512))
    assert memory.recompute == report.setup.recompute == "op"
    assert any(s.fits for s in memory.stages)


def test_memory_without_a_block_size_needs_one() -> None:
    """ZeRO-3 gathers one block at a time: with only a parameter count, dpcost must not gather the whole model."""
    custom = ModelSpec(name="custom", title="7.5B", params=7.5e9)
    with pytest.raises(InputError, match="largest_layer_params"):
        memory_by_stage(custom, H100, Options(dp=64))
    given = ModelSpec(name="custom", title="7.5B", params=7.5e9, largest_layer_params=1e9)
    stages = memory_by_stage(given, H100, Options(dp=64)).stages
    assert stages[3].total_bytes < stages[2].total_bytes


def test_one_zero3_unit_for_buffers_and_timeline() -> None:
    """The gathered buffer is sized from the largest unit the timeline gathers, embedding and head included."""
    from dpcost.engine.prepare import units

    model = load_model("llama-70b")
    c = count_params(model)
    largest_unit = max(u.params for u in units(c, model, 4096))
    r = estimate(model, H100, Options(dp=512, zero=3, recompute="full"))
    states = r.memory.stages[3]
    buckets = 2 * 25 * 2**20
    cublas = 2 * 32 * 2**20  # PyTorch's two cuBLAS workspaces on Hopper (engine/workspaces.py)
    assert states.buffers_bytes - buckets - cublas == pytest.approx(largest_unit * (2 * 2 + 2))


@pytest.mark.parametrize("spec", MODELS, ids=lambda s: s.name)
def test_model_states_do_not_increase_with_stage(spec: ModelSpec) -> None:
    for recipe in RECIPES:
        for dp in (8, 64, 512):
            r = memory_by_stage(spec, H100, Options(dp=dp, recipe=recipe, recompute="full"))
            states = [s.model_states_bytes for s in r.stages]
            assert states == sorted(states, reverse=True), (recipe, dp)


@pytest.mark.parametrize("spec", MODELS, ids=lambda s: s.name)
def test_stage_3_total_below_stage_2_when_the_unit_is_small(spec: ModelSpec) -> None:
    c = count_params(spec)
    if c.largest_block > c.total / 20:
        pytest.skip("a unit this large is not small")
    r = memory_by_stage(spec, H100, Options(dp=64, recompute="full"))
    assert r.stages[3].total_bytes < r.stages[2].total_bytes


def test_recompute_choices_are_documented() -> None:
    assert RECOMPUTE == ("none", "selective", "op", "full")
