"""A pipeline's uneven split and its MTP modules: Megatron's --decoder-first/last-pipeline-num-layers
(transformer_block.py get_num_layers_to_build) and --mtp-num-layers, whose modules Megatron-Core builds on the
last stage when no custom layout places them (multi_token_prediction.py mtp_on_this_rank)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpcost.catalog import load_model, load_topology
from dpcost.cli import app
from dpcost.engine.layout import Layout
from dpcost.engine.layout_estimate import layout_step, stage_loads
from dpcost.engine.layout_step import ep_calls, stage_kinds, stage_layer_counts
from dpcost.engine.ops import mtp_ops
from dpcost.engine.pipeline_layout import ranks_of_stages

runner = CliRunner()

# DeepSeek-V3's config.json: hidden 7168, vocab 129280, 256 routed experts of 3 x 7168 x 2048.
H, VOCAB, EXPERT = 7168, 129_280, 3 * 7168 * 2048
# Megatron-Bridge's DeepSeek-V3 recipe on 16 stages (recipes/deepseek/deepseek_v3.py layout_map, (16, 1)): the
# embedding and 4 layers, 14 stages of 4, then 1 layer, the MTP module and the loss.
BRIDGE = ["--pp", "16", "--ep", "8", "--dp", "16", "--global-batch", "2048", "--seq-len", "4096"]


def test_given_end_stages_leave_the_rest_even() -> None:
    """Megatron: the stages not given split the remaining layers evenly, and must."""
    assert stage_layer_counts(61, 16, 4, 1) == [4] * 15 + [1]
    assert stage_layer_counts(126, 16, 6) == [6] + [8] * 15
    assert stage_layer_counts(126, 16, None, 6) == [8] * 15 + [6]
    with pytest.raises(ValueError, match="do not split"):
        stage_layer_counts(61, 16, 5)
    with pytest.raises(ValueError, match="PP > 1"):
        stage_layer_counts(32, 1, 16)
    with pytest.raises(ValueError, match="40 layers are more than the 32 there are"):
        stage_layer_counts(32, 4, 20, 20)


def test_mtp_module_is_a_last_layer_and_the_head_again_on_the_last_stage() -> None:
    """One MTP module on the last stage: the experts of one more MoE layer, eh_proj (2h x h) and its three norms,
    the MTP's own embedding (DeepSeek-V3 does not tie it), and the output head run once more per token."""
    model = load_model("deepseek-v3")
    layout = Layout(pp=16, ep=8, dp=16)
    plain = stage_loads(model, layout, 4096, ranks_of_stages([3] + [4] * 14 + [2]))[-1]
    mtp = stage_loads(model, layout, 4096, ranks_of_stages([4] * 15 + [1]), mtp_layers=1)[-1]
    assert mtp.layers == 1
    assert mtp.expert_params == plain.expert_params == 2 * 256 * EXPERT / 8
    assert mtp.dense_params - plain.dense_params == pytest.approx(2 * H * H + 3 * H + VOCAB * H)
    assert mtp.forward_flops - plain.forward_flops == pytest.approx(2 * (2 * H * H + 3 * H) + 2 * VOCAB * H)
    assert stage_kinds(load_model("deepseek-v3").architecture, ranks_of_stages([4] * 15 + [1]), 1)[-1] == (True, True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="61 layers"):
        stage_loads(model, layout, 4096, ranks_of_stages([4] * 15 + [2]))


def test_mtp_layers_dispatch_their_tokens_too() -> None:
    """An MTP module's layer is MoE in DeepSeek-V3: its all-to-alls count on the stage that holds it."""
    a = load_model("deepseek-v3").architecture
    assert a is not None
    layout = Layout(pp=16, ep=8, dp=16)
    calls = ep_calls(a, layout, 1, 4096, 2.0, False, stages=stage_kinds(a, ranks_of_stages([1] + [4] * 15), 3))
    assert calls[0].per_micro_batch == 4 * 7  # 4 MoE layers and 3 MTP modules on the last stage


def test_mtp_ops_add_eh_proj_and_the_head() -> None:
    """Megatron-Core's MultiTokenPredictionLayer: embedding, enorm, hnorm, eh_proj (2h -> h), then the final
    norm, output head and loss."""
    a = load_model("deepseek-v3").architecture
    assert a is not None
    ops = mtp_ops(a, 4096, "fused", "vocab-parallel")
    shapes = [op.shape for op in ops if op.kind == "gemm"]
    assert shapes == [(4096.0, 2.0 * H, float(H)), (4096.0, float(H), float(VOCAB))]
    assert [op.module for op in ops].count("layernorm") == 3


def test_bridge_layout_with_mtp_paces_its_last_stage_only_when_heavier() -> None:
    """On the recipe's split the last stage (1 layer, MTP, two heads) does less than a 4-layer stage; on the even
    split (3, 14 x 4, 2) it runs 2 layers, MTP and two heads: the MTP module costs more there."""
    model, topology = load_model("deepseek-v3"), load_topology("dgx-b200")
    layout = Layout(pp=16, ep=8, dp=16)

    def step(**kw: object) -> float:
        return layout_step(model, topology, layout, micro_batch=1, global_batch=2048, seq_len=4096, mfu=0.5,
                           **kw).step  # type: ignore[arg-type]  # fmt: skip

    none, even, bridge = step(), step(mtp_layers=1), step(mtp_layers=1, first_stage_layers=4, last_stage_layers=1)
    assert none < bridge < even


def test_estimate_trains_mtp_and_says_so() -> None:
    result = runner.invoke(app, ["estimate", "-m", "deepseek-v3", "-t", "dgx-b200", *BRIDGE, "--mtp-layers", "1",
                                 "--first-stage-layers", "4", "--last-stage-layers", "1", "-f", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["layout"]["mtp_layers"] == 1
    assert [s["layers"] for s in doc["layout"]["stages"]] == [4] * 15 + [1]
    plain = json.loads(runner.invoke(app, ["estimate", "-m", "deepseek-v3", "-t", "dgx-b200", *BRIDGE,
                                           "-f", "json"]).output)  # fmt: skip
    assert "mtp_layers" not in plain["layout"]
    table = runner.invoke(app, ["estimate", "-m", "deepseek-v3", "-t", "dgx-b200", *BRIDGE, "--mtp-layers", "1"])
    assert "MTP module, trained on the last pipeline stage" in table.output


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["-m", "llama-8b", "-d", "8", "--mtp-layers", "1"], "--mtp-layers"),
        (["-m", "llama-8b", "-d", "8", "--first-stage-layers", "4"], "--first-stage-layers"),
        (["-m", "deepseek-v3", "-t", "dgx-b200", *BRIDGE, "--first-stage-layers", "5"], "--first-stage-layers"),
        (["-m", "deepseek-v3", "-t", "dgx-b200", *BRIDGE, "--last-stage-layers", "1", "--virtual-stages", "2"],
         "--last-stage-layers"),
    ],
)  # fmt: skip
def test_refused_in_the_words_of_the_flag(args: list[str], flag: str) -> None:
    result = runner.invoke(app, ["estimate", *args])
    assert result.exit_code == 2
    assert result.output.startswith(f"dpcost: error: {flag}:") and len(result.output.strip().splitlines()) == 1
