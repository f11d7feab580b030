"""Megatron-Core's custom pipeline layout (--pipeline-model-parallel-layout): which layers each virtual stage builds.

A layout string lists the model's PP x V virtual stages in order, separated by "|", each as its layers: "E" the
embedding, "t" a decoder layer, "m" a multi-token-prediction module, "L" the output head and loss. "(...)*n" and
"x*n" repeat, commas are cosmetic: "Et*4|(t*4|)*14tmL" is 16 stages, the embedding and 4 layers, 14 x 4 layers, then
1 layer, MTP and the loss. Virtual stage i runs on pipeline rank i mod PP, so rank r builds stages r, r + PP, ...
(megatron/core/transformer/pipeline_parallel_layer_layout.py at d98e8a64: parse_str_to_list, __init__,
validate_layer_layout). Megatron-LM sets the virtual stages per rank to the stage count over PP
(megatron/training/arguments.py validate_args), and refuses the layout beside --decoder-first/last-pipeline-num-layers
or another virtual-stage flag.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence

from dpcost.frozen import frozen

# parse_str_to_list's characters: the embedding, a decoder ("transformer") layer, an MTP module, the loss
KINDS = {"E": "embedding", "t": "decoder", "m": "mtp", "L": "loss"}
# parse_str_to_list's unrolling, in its order: "(...)*n" first, then "x*n"
_REPEATS = (re.compile(r"\(([^)]+)\)\*(\d+)"), re.compile(r"(.)\*(\d+)"))
# a layout longer than this after unrolling, or of more stages, is refused: no run has that many
MAX_UNROLLED = 1_000_000
MAX_STAGES = 65_536


@frozen
class PipelineLayout:
    """A parsed layout: each virtual stage's layers as their characters, in layer order."""

    stages: tuple[str, ...]

    def decoder_layers(self) -> list[int]:
        """Decoder layers per virtual stage (get_num_layers_to_build)."""
        return [stage.count("t") for stage in self.stages]

    def rank_layer_indices(self, pp: int) -> tuple[tuple[int, ...], ...]:
        """The decoder layers' indices each rank builds (ranks_of_stages)."""
        return ranks_of_stages(self.decoder_layers(), pp)


def ranks_of_stages(per_stage: Sequence[int], pp: int | None = None) -> tuple[tuple[int, ...], ...]:
    """The decoder layers' indices each pipeline rank builds when virtual stage k holds per_stage[k] layers, numbered
    in stage order, and virtual stage k runs on rank k mod PP: rank r those of stages r, r + PP, ..., in layer order
    (get_layer_id_list). With as many stages as ranks (PP's default), each rank's run of layers in order."""
    pp = len(per_stage) if pp is None else pp
    starts = list(itertools.accumulate(per_stage, initial=0))
    return tuple(
        tuple(i for k in range(rank, len(per_stage), pp) for i in range(starts[k], starts[k] + per_stage[k]))
        for rank in range(pp)
    )


@functools.lru_cache(maxsize=256)
def parse_pipeline_layout(text: str) -> PipelineLayout:
    """parse_str_to_list: commas dropped, repeats unrolled, one stage per "|"; ValueError naming a character that
    is not E, t, m or L (a space too, as there), or beyond MAX_STAGES stages."""
    unrolled = text.replace(",", "")
    for pattern in _REPEATS:
        unrolled = _unrolled(pattern, unrolled)
    stages = tuple(unrolled.split("|"))
    if len(stages) > MAX_STAGES:
        raise ValueError(f"{len(stages):,} stages are beyond {MAX_STAGES:,}; check the layout")
    for stage in stages:
        for char in stage:
            if char not in KINDS:
                raise ValueError(f"{char!r} is not a layer: write E (embedding), t (decoder layer), m (MTP), L (loss)")
    return PipelineLayout(stages)


def _unrolled(pattern: re.Pattern[str], text: str) -> str:
    """re.sub(pattern, group 1 x group 2, text), refused before it grows beyond MAX_UNROLLED characters."""
    pieces, end, length = [], 0, len(text)
    for found in pattern.finditer(text):
        part, digits = found.group(1), found.group(2)
        times = int(digits) if len(digits) <= len(str(MAX_UNROLLED)) else MAX_UNROLLED + 1
        length += len(part) * times - len(found.group(0))
        if length > MAX_UNROLLED:
            raise ValueError(f"{part!r} repeated {digits} times unrolls beyond {MAX_UNROLLED:,} characters")
        pieces += [text[end : found.start()], part * times]
        end = found.end()
    return "".join(pieces) + text[end:]


def virtual_stages_of(layout: PipelineLayout, pp: int) -> int:
    """The virtual stages per rank Megatron-LM runs the layout with: its stages over PP (arguments.py
    validate_args); ValueError where PP does not divide them."""
    count = len(layout.stages)
    if count % pp:
        raise ValueError(f"its {count} stage{'s do' if count != 1 else ' does'} not split over PP {pp}")
    return count // pp


def layout_refusal(
    layout: PipelineLayout, pp: int, virtual_stages: int, layers: int, mtp_layers: int, mamba: bool = False
) -> str | None:
    """Why Megatron-Core (validate_layer_layout, arguments.py) or dpcost does not run the layout on PP ranks of V
    virtual stages with this many decoder layers and MTP modules, of a model with Mamba layers or not; None where it
    runs. dpcost builds the MTP modules on the last rank (layout_step.stage_kinds), so a layout that puts them
    elsewhere (Megatron's standalone MTP) is refused here."""
    if mamba:
        return "a hybrid Mamba model's stages come from its --hybrid-layer-pattern, not a layout (arguments.py)"
    try:
        per_rank = virtual_stages_of(layout, pp)
    except ValueError as exc:
        return str(exc)
    if per_rank != virtual_stages:
        return f"its {len(layout.stages)} stages are {per_rank} per rank at PP {pp}: give --virtual-stages {per_rank}"
    flat = "".join(layout.stages)
    if not flat.startswith("E") or flat.count("E") != 1:
        return "the embedding (E) must come once, first"
    if not flat.endswith("L") or flat.count("L") != 1:
        return "the loss (L) must come once, last"
    if "E" not in layout.stages[0] or "L" not in layout.stages[-1]:
        return "dpcost builds the embedding (E) on the first stage and the loss (L) on the last"
    if flat.count("t") != layers:
        return f"it builds {flat.count('t')} decoder layers (t), the model has {layers}"
    if flat.count("m") != mtp_layers:
        return f"it builds {flat.count('m')} MTP modules (m), --mtp-layers gives {mtp_layers}"
    if "m" in flat and "t" in flat[flat.index("m") :]:
        return "decoder layers (t) must come before the MTP modules (m)"
    if "m" in flat and layout.stages[-1].count("m") != mtp_layers:
        return "dpcost builds every MTP module (m) on the last stage, with the loss"
    return None


def checked_layout(
    text: str, pp: int, virtual_stages: int, layers: int, mtp_layers: int, mamba: bool = False
) -> PipelineLayout:
    """The layout parsed and checked (layout_refusal); ValueError saying why where it does not run."""
    layout = parse_pipeline_layout(text)
    refused = layout_refusal(layout, pp, virtual_stages, layers, mtp_layers, mamba)
    if refused:
        raise ValueError(refused)
    return layout


def accounted_layout(
    layers: int, pp: int, virtual_stages: int, embedding: bool, loss: bool, mtp_layers: int = 0
) -> str:
    """Megatron-Core's split with the embedding and/or the loss counted as a layer (--account-for-embedding-in-
    pipeline-split, --account-for-loss-in-pipeline-split; transformer_block.py get_num_layers_to_build): the layers
    and those counted over PP x V virtual stages evenly, the first stage one decoder layer fewer for the embedding,
    the last one fewer for the loss, the MTP modules with the loss; written as a layout. ValueError where they do not
    split evenly, as Megatron asserts."""
    counted = layers + embedding + loss
    stages = pp * virtual_stages
    if counted % stages:
        raise ValueError(f"{layers} layers{' and the embedding' if embedding else ''}{' and the loss' if loss else ''} "
                         f"do not split over PP x V = {stages} stages")  # fmt: skip
    per = counted // stages
    built = [per] * stages
    built[0] -= embedding
    built[-1] -= loss
    if min(built) < 0:
        raise ValueError(
            f"{stages} stages of {per} layer{'s' if per != 1 else ''} leave none for the embedding or loss"
        )
    parts = [f"t*{n}" if n > 1 else "t" * n for n in built]
    end = "m" * mtp_layers + "L"
    return "|".join(["E" + parts[0], *parts[1:-1], parts[-1] + end] if stages > 1 else ["E" + parts[0] + end])
