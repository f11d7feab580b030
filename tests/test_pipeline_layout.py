"""Megatron-Core's --pipeline-model-parallel-layout (engine/pipeline_layout.py), checked against what its source and
Megatron-Bridge's recipes say the strings mean."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpcost.catalog import load_model, load_topology
from dpcost.cli import app
from dpcost.engine.layout import Layout
from dpcost.engine.layout_estimate import layout_step
from dpcost.engine.layout_memory import stage_layers
from dpcost.engine.layout_step import PipelineSplit, rank_layers, virtual_stage_layers
from dpcost.engine.pipeline_layout import accounted_layout, layout_refusal, parse_pipeline_layout

runner = CliRunner()

# Megatron-Bridge's DeepSeek-V3 layout_map (recipes/deepseek/deepseek_v3.py _get_deepseek_v3_pipeline_layout at
# v0.5.0) for PP 4 x VP 4 and PP 16: [embedding + 4 decoders], 14 x [4 decoders], [decoder, mtp, loss]; the same
# string the v0.5.0 performance presets and MLPerf Training v6.0's DeepSeek-V3 configs pass (PIPELINE_LAYOUT).
DSV3 = "Et*4|(t*4|)*14tmL"
DSV3_STAGES = ["Etttt"] + ["tttt"] * 14 + ["tmL"]


def test_parsed_as_megatrons_parse_str_to_list() -> None:
    """parse_str_to_list's docstring: "Ettt|(tt|)*29,m|L" is [E,t,t,t] + [t,t] x 29 + [m], [L]; commas are
    cosmetic, "(...)*n" unrolls before "x*n"."""
    assert list(parse_pipeline_layout("Ettt|(tt|)*29,m|L").stages) == ["Ettt"] + ["tt"] * 29 + ["m", "L"]
    assert list(parse_pipeline_layout(DSV3).stages) == DSV3_STAGES
    assert list(parse_pipeline_layout("(|tt)*2,tL").stages) == ["", "tt", "tttL"]  # its "(|ab)*2,cd -> |ab|abcd"


def test_rank_r_builds_virtual_stages_r_r_plus_pp() -> None:
    """PipelineParallelLayerLayout.__init__: layout[pp_rank][vpp_rank] = stages[vpp_rank * PP + pp_rank], so at PP 4
    x VP 4 rank 3 holds stages 3, 7, 11 and 15: 4 + 4 + 4 + 1 decoder layers; the others 16."""
    layout = parse_pipeline_layout(DSV3)
    assert [len(built) for built in layout.rank_layer_indices(4)] == [16, 16, 16, 13]
    assert [len(built) for built in layout.rank_layer_indices(16)] == [4] * 15 + [1]
    assert [len(built) for built in layout.rank_layer_indices(2)] == [32, 29]  # GB300's PP 2 x VP 8 preset
    indices = layout.rank_layer_indices(4)
    assert indices[0] == (0, 1, 2, 3, 16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51)  # get_layer_id_list
    assert indices[3][-1] == 60 and sorted(i for rank in indices for i in rank) == list(range(61))
    assert stage_layers(PipelineSplit(61, 4, 4, pipeline_layout=DSV3)) == indices


@pytest.mark.parametrize(
    ("text", "pp", "virtual", "mtp", "why"),
    [
        (DSV3, 3, 1, 1, "do not split over PP 3"),
        (DSV3, 4, 2, 1, "give --virtual-stages 4"),
        (DSV3, 4, 4, 0, "1 MTP modules (m), --mtp-layers gives 0"),
        ("Et*4|(t*4|)*14ttL", 4, 4, 0, "62 decoder layers"),
        ("t*4E|(t*4|)*14tmL", 4, 4, 1, "embedding (E) must come once, first"),
        ("Et*4|(t*4|)*14tLm", 4, 4, 1, "loss (L) must come once, last"),
        ("Et*4|(t*4|)*13t*3|tmtL", 4, 4, 1, "decoder layers (t) must come before"),
        # Megatron-Bridge's standalone MTP (_build_standalone_mtp_layout): MTP alone on the next-to-last stage
        ("Et*5|(t*5|)*4(t*4|)*9m|L", 4, 4, 1, "MTP module (m) on the last stage"),
        # two MTP modules in two stages: Megatron keeps them in one (validate_layer_layout)
        ("Et*4|(t*4|)*13t*5m|mL", 4, 4, 2, "every MTP module (m) on the last stage"),
    ],
)  # fmt: skip
def test_refused_where_megatron_or_dpcost_does_not_run_it(text: str, pp: int, virtual: int, mtp: int, why: str) -> None:
    assert why in (layout_refusal(parse_pipeline_layout(text), pp, virtual, 61, mtp) or "")


def test_a_hostile_repeat_is_refused_not_unrolled() -> None:
    with pytest.raises(ValueError, match="beyond 1,000,000"):
        parse_pipeline_layout("(t*999999|)*1000")
    with pytest.raises(ValueError, match="'x' is not a layer"):
        parse_pipeline_layout("Etx|L")


def test_the_pp16_layout_is_the_bridge_recipes_end_stages() -> None:
    """Megatron-Bridge's (16, 1) layout_map and --decoder-first/last-pipeline-num-layers 4 and 1 build the same
    stages: the step is the same either way."""
    model, topology = load_model("deepseek-v3"), load_topology("dgx-b200")
    layout = Layout(pp=16, ep=8, dp=16)

    def step(**kw: object) -> float:
        return layout_step(model, topology, layout, micro_batch=1, global_batch=2048, seq_len=4096, mfu=0.5,
                           mtp_layers=1, **kw).step  # type: ignore[arg-type]  # fmt: skip

    assert step(pipeline_layout=DSV3) == step(first_stage_layers=4, last_stage_layers=1)


def test_estimate_reads_the_layout_and_refuses_it_in_its_words() -> None:
    args = ["estimate", "-m", "deepseek-v3", "-t", "gb200-nvl72", "--pp", "4", "--ep", "64", "--dp", "64",
            "--global-batch", "4096", "--seq-len", "4096", "--mtp-layers", "1"]  # fmt: skip
    doc = json.loads(
        runner.invoke(app, [*args, "--virtual-stages", "4", "--pipeline-layout", DSV3, "-f", "json"]).output
    )
    assert [s["layers"] for s in doc["layout"]["stages"]] == [16, 16, 16, 13]
    for extra, flag in (
        (["--pipeline-layout", DSV3], "--pipeline-layout"),  # 16 stages at PP 4 without --virtual-stages 4
        (["--virtual-stages", "4", "--pipeline-layout", DSV3, "--first-stage-layers", "4"], "--first-stage-layers"),
    ):
        result = runner.invoke(app, [*args, *extra])
        assert result.exit_code == 2 and result.output.startswith(f"dpcost: error: {flag}:"), result.output
        assert len(result.output.strip().splitlines()) == 1
    alone = runner.invoke(app, ["estimate", "-m", "llama-8b", "-d", "8", "--pipeline-layout", "Et*32L"])
    assert alone.exit_code == 2 and alone.output.startswith("dpcost: error: --pipeline-layout:")


def test_given_end_stages_split_into_each_ranks_chunks() -> None:
    """--decoder-first/last-pipeline-num-layers with interleaving (transformer_block.py get_num_layers_to_build): a
    rank's layers, the given end stages' or the middle's even share, split evenly over its V chunks, chunk k of all
    ranks numbered before chunk k + 1. 126 layers on PP 16 x V 2 with 6 first and 8 last: rank 0 builds layers 0-2
    and, after the first chunks' 3 + 14 x 4 + 4, 63-65; a rank's layers that do not split over V are refused."""
    ranks = rank_layers(PipelineSplit(126, 16, 2, 6, 8))
    assert [len(built) for built in ranks] == [6] + [8] * 14 + [8]
    assert virtual_stage_layers(PipelineSplit(126, 16, 2, 6, 8))[0::16] == (
        3,
        3,
    )  # rank 0's two chunks, as memory counts them
    assert ranks[0] == (0, 1, 2, 63, 64, 65)
    with pytest.raises(ValueError, match="do not split into 2 chunks"):
        rank_layers(PipelineSplit(61, 16, 2, None, 1))


def test_the_accounted_split_is_get_num_layers_to_build() -> None:
    """--account-for-embedding/loss-in-pipeline-split (transformer_block.py get_num_layers_to_build): the layers plus
    one for each counted end over PP x V stages, the first stage one fewer for the embedding, the last one fewer for
    the loss. Megatron-LM's functional test (6 layers, PP 4 x VP 2): a stage of the embedding alone, six of a layer,
    one of the loss alone. Llama 3 405B's 126 layers on 16 stages: 7 + 14 x 8 + 7 (arXiv 2407.21783 section
    3.3.2)."""
    assert accounted_layout(6, 4, 2, True, True) == "E|t|t|t|t|t|t|L"
    assert [
        len(built) for built in parse_pipeline_layout(accounted_layout(126, 16, 1, True, True)).rank_layer_indices(16)
    ] == [7] + [8] * 14 + [7]
    assert accounted_layout(7, 2, 1, True, False) == "Et*3|t*4L"
    with pytest.raises(ValueError, match="do not split over PP x V = 16 stages"):
        accounted_layout(61, 4, 4, True, True)


def test_megatron_refuses_what_dpcost_refuses_too() -> None:
    """Megatron's parser takes no spaces; a hybrid Mamba model's stages come from --hybrid-layer-pattern
    (arguments.py refuses a layout beside it); too many stages are refused before they are built."""
    with pytest.raises(ValueError, match="' ' is not a layer"):
        parse_pipeline_layout("E t|L")
    layout = parse_pipeline_layout("Et*26|t*26L")
    assert "hybrid-layer-pattern" in (layout_refusal(layout, 2, 1, 52, 0, mamba=True) or "")
    with pytest.raises(ValueError, match="beyond 65,536"):
        parse_pipeline_layout("E" + "|" * 70_000 + "L")
    with pytest.raises(ValueError, match="unrolls beyond"):
        parse_pipeline_layout("t*" + "9" * 5000)
