"""Amazon's Ergo (model_type ergo; configuration_ergo.py and modeling_ergo.py, transformers 5.25.0). Its counts are
held to what transformers builds (resolved/transformers-5.25.json, test_hf_configs.py: the class defaults give
1,105,550,917,376 parameters and 16,128 router correction biases); here what the configuration and modeling code say
of the keys a file may write, how an expert's output norm is counted and kept, and what dpcost refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.activations import layer_tensors
from dpcost.engine.params import count_params, routed_expert, shared_expert

DEFAULTS, SMALL, LISTED, DENSE = transformers_cases("ergo")


def test_the_window_s_other_name_and_the_tie_flag_resolve_as_transformers_resolves_them(tmp_path: Path) -> None:
    """ErgoConfig.attribute_map reads local_attention_window as sliding_window; ErgoForCausalLM ties nothing, so a
    file's tie_word_embeddings changes no count."""
    renamed = {k: v for k, v in LISTED.items() if k != "sliding_window"}
    renamed["local_attention_window"] = LISTED["sliding_window"]
    a = spec_from_config(tmp_path, renamed).architecture
    assert a is not None and a.local_attention is not None and a.local_attention.size == 32
    assert DENSE["tie_word_embeddings"] is True
    untied = {k: v for k, v in DENSE.items() if k != "tie_word_embeddings"}
    total = count_params(spec_from_config(tmp_path, DENSE)).total
    assert total == count_params(spec_from_config(tmp_path, untied)).total


def test_an_expert_s_output_norm_is_its_own_and_counts_where_the_expert_runs(tmp_path: Path) -> None:
    """ErgoExpertNorm holds a hidden-wide weight per routed expert ((num_experts, hidden_size)), and the shared expert
    an RMSNorm of its own: the class defaults' routed expert is 8,192 x 4,096 x 2 + 8,192, the shared one
    8,192 x 8,192 x 2 + 8,192; a token runs its 8 routed experts' norms and the shared one's."""
    spec = spec_from_config(tmp_path, DEFAULTS)
    a = spec.architecture
    assert a is not None
    assert routed_expert(a) == 8192 * 4096 * 2 + 8192
    assert shared_expert(a) == 8192 * 8192 * 2 + 8192
    moe, dense = count_params(spec).blocks[1], count_params(spec).blocks[0]
    assert moe.params - moe.active == (256 - 8) * routed_expert(a)
    assert dense.params == dense.active


def test_each_routed_copy_keeps_its_output_for_the_norm(tmp_path: Path) -> None:
    """The norm over each routed copy's output keeps that output, as any norm keeps its input (2 bytes a channel
    under fused kernels): per token, 8 copies more of hidden_size than the experts alone keep, and the shared
    expert's output once."""
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None
    plain = a.model_copy(update={"moe": a.moe.model_copy(update={"expert_norms": False})})  # type: ignore[union-attr]
    normed = layer_tensors(a, True, kernels="fused")
    without = layer_tensors(plain, True, kernels="fused")
    extra = sum(t.bytes_per_token for t in normed.tensors) - sum(t.bytes_per_token for t in without.tensors)
    assert extra == 2 * 8192 * (8 + 1)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"global_attention_every_n_layers": 0, "layer_types": None},
            "global_attention_every_n_layers: a period other",
        ),
        ({"hidden_size": 0}, "hidden_size: a width of 1 or more, got 0"),
        ({"num_attention_heads": 300}, "num_attention_heads: from 1 to hidden_size (256), got 300"),
        ({"num_attention_heads": 0}, "num_attention_heads: from 1 to hidden_size (256), got 0"),
        ({"mlp_layer_types": ["dense", "moe", "sparse", "sparse", "sparse", "sparse"]}, "mlp_layer_types:"),
    ],
)
def test_what_transformers_cannot_build_is_refused_in_one_line(
    tmp_path: Path,
    change: dict,
    said: str,  # type: ignore[type-arg]
) -> None:
    """ErgoConfig.__post_init__ takes (i + 1) % global_attention_every_n_layers where layer_types is not given (a
    period of 0 divides by zero there, and is not read beside layer_types, test below);
    ErgoAttention's head_dim is hidden_size // num_attention_heads (0 past hidden_size); mlp_layer_types takes dense
    or sparse per layer."""
    assert said in estimate_refusal(tmp_path, {**SMALL, **change})


@pytest.mark.parametrize("flags", [("--tp", "2", "--sequence-parallel"), ("--compute-model", "ops")])
def test_layouts_and_per_op_times_refuse_it_by_name(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Megatron's experts have no norm of their own over their output: layouts and the per-op model say so."""
    assert "a norm over each expert's output" in estimate_refusal(tmp_path, SMALL, *flags)


def test_the_full_attention_period_is_read_only_without_layer_types(tmp_path: Path) -> None:
    """ErgoConfig.__post_init__ builds layer_types from global_attention_every_n_layers only where the file lists
    none: beside a list, a period of 0 is not read; a negative one is taken as Python's % takes it (-3 as 3)."""
    listed = {**SMALL, "global_attention_every_n_layers": 0}
    assert (
        count_params(spec_from_config(tmp_path, listed)).total == count_params(spec_from_config(tmp_path, SMALL)).total
    )
    negative = {**{k: v for k, v in SMALL.items() if k != "layer_types"}, "global_attention_every_n_layers": -3}
    a = spec_from_config(tmp_path, negative).architecture
    assert a is not None and a.local_attention is not None and a.local_attention.layers == (0, 1, 3, 4)
