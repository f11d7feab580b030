"""Dory (model_type dory; configuration_dory.py and modeling_dory.py, transformers 5.25.0: NVIDIA's looped nGPT,
NVIDIA-Nemotron-Labs-Dory1.0-4B). Its counts and sliding layers are held to what transformers builds and runs
(resolved/transformers-5.25.json, test_hf_configs.py); here what its configuration and forward say of its loops."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import estimate_refusal, spec_from_config, transformers_cases

from dpcost.engine.activations import kv_cache_bytes
from dpcost.engine.params import count_params
from dpcost.engine.serving import decode_weight_bytes

DEFAULTS, LOOPED = transformers_cases("dory")


def test_the_released_layout_and_the_loops(tmp_path: Path) -> None:
    """Released files list each layer as an attention block and an "mlp" block (72 entries, 8 + 8 input and output
    blocks); DoryConfig halves them to 36 layers, 8 in, 20 recurrent, 8 out. DoryModel runs the recurrent ones
    n_recurrent_loops = 2 times: 56 runs, the second loop's 20 on the first loop's weights."""
    assert len(DEFAULTS["layer_types"]) == 72 and DEFAULTS["layer_types"][1] == "mlp"
    a = spec_from_config(tmp_path, DEFAULTS).architecture
    assert a is not None and a.layers == 8 + 2 * 20 + 8
    assert a.layer_weights[28:48] == tuple(range(8, 28)) and a.layer_weights[48:] == tuple(range(48, 56))
    c = count_params(spec_from_config(tmp_path, DEFAULTS))
    layer = c.blocks[8].params
    assert c.active - c.total == pytest.approx(20 * layer)  # a token runs each recurrent layer twice


def test_ngpt_s_scales(tmp_path: Path) -> None:
    """Each layer's lambda_1 and lambda_2 (hidden), the attention's sqk and s_gate (heads x head_dim) and the MLP's
    suv_gate and suv_up (intermediate_size), and lm_head's logit_scale (vocab): for the defaults 36 x (2 x 2560 +
    2 x 16 x 256 + 2 x 7168) + 131,072. The L2 norms hold no weight."""
    parts = dict(count_params(spec_from_config(tmp_path, DEFAULTS)).components)
    assert parts["nGPT scales"] == 36 * (2 * 2560 + 2 * 16 * 256 + 2 * 7168) + 131_072
    assert parts["norms"] == 0


def test_each_loop_keeps_its_cache_unless_the_last_loop_writes_it(tmp_path: Path) -> None:
    """per_loop keeps a cache per run of a recurrent layer (copies of the layer's cache for each loop);
    last_loop one per layer, which the earlier loops read (DoryPastReader). Within the window every layer caches
    every token: 3 loops of 3 recurrent layers around 1 + 2 give 12 caches against 6."""
    per_loop = spec_from_config(tmp_path, {**LOOPED, "recurrent_kv_cache_mode": "per_loop"}).architecture
    last_loop = spec_from_config(tmp_path, LOOPED).architecture
    assert per_loop is not None and last_loop is not None and LOOPED["recurrent_kv_cache_mode"] == "last_loop"
    seq = 32  # within the 64-token window
    assert kv_cache_bytes(per_loop, seq, 1) / kv_cache_bytes(last_loop, seq, 1) == pytest.approx(12 / 6)


def test_a_decode_step_reads_a_looped_layer_at_each_run(tmp_path: Path) -> None:
    """A 4B model's weights do not stay in the L2 cache between layers: each run of a recurrent layer reads it
    again, 20 layers' more bf16 bytes a step than the held weights."""
    spec = spec_from_config(tmp_path, DEFAULTS)
    c = count_params(spec)
    held = 2.0 * (c.total - c.lookups - c.idle)
    assert decode_weight_bytes(c, spec.architecture, 1) - held == pytest.approx(2.0 * 20 * c.blocks[8].params)


def test_sections_that_do_not_add_up_are_refused(tmp_path: Path) -> None:
    """validate_architecture: n_input_layers + n_recurrent_layers + n_output_layers == num_hidden_layers."""
    said = estimate_refusal(tmp_path, {**LOOPED, "n_recurrent_layers": 10})
    assert "must equal num_hidden_layers" in said


def test_the_last_loop_s_cache_is_read_by_every_loop(tmp_path: Path) -> None:
    """Under last_loop the earlier loops attend over the holder's cache and their own tokens (DoryPastReader:
    torch.cat(past, new)), so a decode step reads what per_loop's copies hold, though the cache is kept once."""
    from dpcost.engine.activations import kv_read_bytes

    per_loop = spec_from_config(tmp_path, {**LOOPED, "recurrent_kv_cache_mode": "per_loop"}).architecture
    last_loop = spec_from_config(tmp_path, LOOPED).architecture
    assert per_loop is not None and last_loop is not None
    assert kv_read_bytes(last_loop, 32, 1) == kv_read_bytes(per_loop, 32, 1)


def test_an_empty_layer_list_is_refused(tmp_path: Path) -> None:
    """DoryConfig fills layer_types only where it is null; an empty list fails its layer-type validation."""
    assert "layer_types: full_attention or sliding_attention" in estimate_refusal(
        tmp_path, {**LOOPED, "layer_types": []}
    )
