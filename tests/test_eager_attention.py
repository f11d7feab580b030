"""What transformers' eager attention keeps of the score square, family by family: dpcost's count held to saved-tensor
hooks on transformers 5.25.0 (tests/reference/hf-configs/resolved/eager-attention.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpcost.catalog import load_model
from dpcost.engine.activations import EAGER_SCORE_BYTES, layer_tensors
from dpcost.errors import InputError

HF = Path(__file__).parent / "reference" / "hf-configs"
MEASURED = json.loads((HF / "resolved" / "eager-attention.json").read_text())["families"]
# Measured, but not what dpcost's eager count is for: DeepSeek-V4's compressed attention is costed as its fused
# kernels keep it (activations._compressed_attention), and Inkling's relative logits as theirs (the README's
# config.json section; its eager path keeps 9 bytes a token pair more); MiniMax's lightning layers (the other
# attention module measured) run their blocks of 256 tokens as squares too, which the lengths measured stay under
NOT_EAGER_SCORES = {"deepseek_v4", "inkling_text", "minimax"}
# Bytes a token pair that do not scale with the heads: MPT's causal mask, kept once for all of them
SHARED_BY_HEADS = 0.5


def _clean(entry: dict) -> bool:
    """A measurement whose two fits agree: the saved bytes grow with the square of the sequence alone."""
    return "error" not in entry and abs(entry["bytes_per_token_pair"] - entry["check"]) < 0.05


def _pair_bytes(arch) -> float:
    """dpcost's bytes a token pair of one attention layer keeps under eager PyTorch without flash or dropout."""
    arch = arch.model_copy(update={"dropout": 0.0})
    mixer, mlp, width = next(kind for kind in arch.layer_kinds if "attention" in kind[0])
    layer = layer_tensors(arch, mlp == "moe", False, "eager", mixer, mlp != "none", width)
    return sum(t.bytes_per_token for t in layer.tensors if t.quadratic and t.saved)


def _compared(tmp_path: Path) -> dict[str, tuple[float, float]]:
    out = {}
    for family, entry in MEASURED.items():
        if family in NOT_EAGER_SCORES or not _clean(entry):
            continue
        path = tmp_path / f"{family.replace(':', '-')}.json"
        path.write_text(json.dumps(entry["config"]))
        try:
            arch = load_model(str(path)).architecture
        except InputError:  # a class default dpcost refuses (a field it requires, a layout it does not cost)
            continue
        if arch is None or not any("attention" in arch.mixer(i) for i in range(arch.layers)):
            continue
        out[family] = (_pair_bytes(arch), entry["bytes_per_token_pair"])
    return out


def test_eager_attention_keeps_what_transformers_keeps(tmp_path):
    """Every family whose class defaults build small and measure cleanly: Llama's fp32 softmax and its 16-bit copy
    (6 bytes a score), BERT's and GPT-2's 16-bit softmax (2), Gemma 2's soft-capping (8), within MPT's shared mask."""
    compared = _compared(tmp_path)
    assert len(compared) >= 90, sorted(compared)
    wrong = {f: v for f, v in compared.items() if abs(v[0] - v[1]) > SHARED_BY_HEADS}
    assert not wrong


@pytest.mark.parametrize(
    ("family", "score_bytes"), [("llama", 6), ("gpt2", 2), ("bert", 2), ("gemma2", 8), ("gemma2:no-softcap", 6)]
)
def test_bytes_a_score(tmp_path, family, score_bytes):
    """The common cases by name: per query, key and head."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MEASURED[family]["config"]))
    arch = load_model(str(path)).architecture
    assert MEASURED[family]["bytes_per_score"] == score_bytes
    assert (arch.eager_score_bytes or EAGER_SCORE_BYTES) == score_bytes


def test_fused_kernels_keep_the_16_bit_softmax():
    """Korthikanti et al.'s count (Megatron's fused softmax): 2 bytes a score whatever the family's eager path."""
    gemma2 = MEASURED["gemma2"]["config"]
    assert gemma2["attn_logit_softcapping"] is not None
    arch = load_model(str(HF / "gpt2.json")).architecture
    fused = layer_tensors(arch.model_copy(update={"dropout": 0.0}), False, False, "fused").tensors
    assert sum(t.bytes_per_token for t in fused if t.quadratic) == 2 * arch.heads
