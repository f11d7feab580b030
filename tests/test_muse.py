"""Meta's Muse text models (modeling_muse_spark.py, modeling_muse_glimmer.py, transformers 5.25.0): Muse Spark
(muse_spark), experts in a latent width under gated attention, and Muse Glimmer (muse_glimmer), the same attention over
a dense MLP. Their counts are held to what transformers builds (resolved/transformers-5.25.json, test_hf_configs.py:
Muse-Spark-Open-816B-A42B's shapes give 819,990,536,192 and Muse-Glimmer-30B's 27,854,780,928); here what the modeling
code says of their layers."""

from __future__ import annotations

from pathlib import Path

from conftest import spec_from_config, transformers_cases

from dpcost.engine.ops import layer_ops
from dpcost.engine.params import count_params
from dpcost.specs import ModelSpec

SPARK = transformers_cases("muse_spark")[0]
GLIMMER = transformers_cases("muse_glimmer")[0]


def _spec(tmp_path: Path, cfg: dict, **outer: object) -> ModelSpec:  # type: ignore[type-arg]
    return spec_from_config(tmp_path, {**cfg, **outer})


def test_spark_s_layers_hold_three_norm_weights_and_two_residual_gates(tmp_path: Path) -> None:
    """MuseSparkTextDecoderLayer: input_layernorm, pre_feedforward_layernorm and post_feedforward_layernorm hold a
    hidden-wide weight each, post_attention_layernorm none (with_scale=False); post_attention_residual_gate and
    post_feedforward_residual_gate a hidden-wide gate each. 62 layers of 8,192."""
    components = dict(count_params(_spec(tmp_path, SPARK)).components)
    assert components["residual gates"] == 2 * 8192 * 62
    assert components["norms"] == 3 * 8192 * 62 + 8192  # and the final norm; the embedding's norm has no weight


def test_spark_s_head_is_its_own_whatever_the_file_says(tmp_path: Path) -> None:
    """MuseSparkForConditionalGeneration declares no tied weights: lm_head is built apart even under
    tie_word_embeddings true. Muse Glimmer's wrapper ties it (_tied_weights_keys) where its flag says so."""
    spark = count_params(_spec(tmp_path, SPARK, tie_word_embeddings=True))
    assert spark.lm_head == spark.embedding
    glimmer = count_params(_spec(tmp_path, GLIMMER, tie_word_embeddings=True))
    assert glimmer.lm_head == 0


def test_every_fourth_layer_from_the_last_attends_in_full(tmp_path: Path) -> None:
    """MuseSparkTextConfig.__post_init__: layer i attends in full where (layers - 1 - i) % 4 == 0, else in a window
    of sliding_window (2,048): Spark's 62 layers are full at 1, 5, ..., 61."""
    a = _spec(tmp_path, SPARK).architecture
    assert a is not None and a.local_attention is not None
    full = [i for i in range(a.layers) if a.local_span(i) is None]
    assert full == list(range(1, 62, 4)) and a.local_attention.size == 2048


def test_the_per_op_model_runs_the_output_gate(tmp_path: Path) -> None:
    """gate_proj (hidden -> heads x head_dim) is a matmul of its own: one Glimmer layer's matmuls do 2 FLOPs per
    weight of its q, k, v, gate, o and MLP projections (its norms' weights aside)."""
    spec = _spec(tmp_path, GLIMMER)
    a = spec.architecture
    assert a is not None
    h, q, kv, f = 6656, 32 * 128, 2 * 128, 19968
    matmuls = sum(op.flops * op.repeats for op in layer_ops(a, False, 1, 4096, "fused") if op.kind == "gemm")
    assert matmuls == 2 * (h * q + 2 * h * kv + h * q + q * h + 3 * h * f)
