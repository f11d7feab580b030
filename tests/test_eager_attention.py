"""What transformers' eager attention keeps of the score square, family by family: dpcost's count held to saved-tensor
hooks on transformers 5.25.0 (tests/reference/hf-configs/resolved/eager-attention.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpcost.catalog import load_model
from dpcost.engine.activations import layer_tensors
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


def _pair_bytes(arch, kernels: str = "eager", autocast: bool = False, dropout: float = 0.0) -> float:
    """dpcost's bytes a token pair (a query and a key, over the heads) its first attention layer keeps without
    flash: under eager PyTorch without dropout unless said."""
    arch = arch.model_copy(update={"dropout": dropout})
    mixer, mlp, width = next(kind for kind in arch.layer_kinds if "attention" in kind[0])
    layer = layer_tensors(arch, mlp == "moe", False, kernels, mixer, mlp != "none", width, autocast)
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
    assert len(compared) >= 112, sorted(compared)  # every family measured cleanly that dpcost reads
    wrong = {f: v for f, v in compared.items() if abs(v[0] - v[1]) > SHARED_BY_HEADS}
    assert not wrong


def _scores(arch, kernels: str = "eager", autocast: bool = False, dropout: float = 0.0) -> float:
    """Bytes a score (a query, a key and a head) a layer keeps without flash."""
    return _pair_bytes(arch, kernels, autocast, dropout) / arch.heads


def _measured(tmp_path: Path, family: str):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MEASURED[family]["config"]))
    return load_model(str(path)).architecture


@pytest.mark.parametrize(
    ("family", "score_bytes"), [("llama", 6), ("gpt2", 2), ("bert", 2), ("gemma2", 8), ("gemma2:no-softcap", 6)]
)
def test_bytes_a_score(tmp_path, family, score_bytes):
    """The common cases by name: Llama's fp32 softmax and its 16-bit copy, GPT-2's and BERT's 16-bit softmax, Gemma 2's
    soft-capping (tanh's output too) unless attn_logit_softcapping is null."""
    assert MEASURED[family]["bytes_per_score"] == score_bytes
    assert _scores(_measured(tmp_path, family)) == score_bytes


def test_fused_kernels_keep_the_16_bit_softmax(tmp_path):
    """Korthikanti et al.'s count (Megatron's fused softmax): 2 bytes a score, whatever the family's eager path keeps
    (Gemma 2's 8)."""
    gemma2 = _measured(tmp_path, "gemma2")
    assert _scores(gemma2, "eager") == 8
    assert _scores(gemma2, "fused") == _scores(gemma2, "compiled") == 2


def test_autocast_runs_the_softmax_in_fp32(tmp_path):
    """torch.autocast lists softmax among the ops it runs in fp32 whatever its input (torch.amp's autocast op
    reference), and the matmul with V casts it back: under DDP's autocast recipe GPT-2 keeps the fp32 softmax and its
    16-bit copy, 6 bytes a score, as Llama does either way."""
    gpt2, llama = _measured(tmp_path, "gpt2"), _measured(tmp_path, "llama")
    assert _scores(gpt2, autocast=True) == 6 and _scores(gpt2) == 2
    assert _scores(llama, autocast=True) == _scores(llama) == 6


def test_dropout_takes_the_place_of_the_16_bit_copy(tmp_path):
    """With attention dropout, nn.functional.dropout keeps its bool mask (1 byte a score on CUDA) and the matmul with
    V keeps dropout's output in place of the 16-bit copy: Llama's path 4 + 1 + 2, GPT-2's 2 + 1 + 2."""
    gpt2, llama = _measured(tmp_path, "gpt2"), _measured(tmp_path, "llama")
    assert _scores(llama, dropout=0.1) == 7
    assert _scores(gpt2, dropout=0.1) == 5


def test_the_scores_are_tensors_of_their_own(tmp_path):
    """The fp32 softmax and its 16-bit copy are two tensors (4 and 2 bytes a score), not one of 6: the largest tensor,
    which the allocator's fragmentation follows, is the fp32 one."""
    llama = _measured(tmp_path, "llama")
    tensors = layer_tensors(llama, False, False, "eager").tensors
    square = [t.bytes_per_token / llama.heads for t in tensors if t.quadratic]
    assert sorted(square) == [2, 4]


@pytest.mark.parametrize(
    ("config", "dropout"),
    [
        ({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 32}, 0.1),
        ({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 32,
          "resid_pdrop": 0.0}, 0.0),
        ({"model_type": "xglm", "d_model": 64, "num_layers": 2, "attention_heads": 4, "vocab_size": 100,
          "dropout": 0.2}, 0.2),
        ({"model_type": "biogpt", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 128, "vocab_size": 100}, 0.1),
        ({"model_type": "gptj", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100}, 0.0),
    ],
)  # fmt: skip
def test_gpt_style_dropout_is_read(tmp_path, config, dropout):
    """GPT-2's, GPTBigCode's, GPT-1's, XGLM's, Kosmos-2's and BioGPT's classes drop out the embedding, each sub-layer's
    output and the attention probabilities at 0.1 by default (resid_pdrop, dropout, hidden_dropout_prob): their
    training forward keeps the masks, and without flash the probabilities' dropout output. GPT-J's defaults are 0."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert load_model(str(path)).architecture.dropout == dropout


TRAFFIC = json.loads((HF / "resolved" / "eager-attention-traffic.json").read_text())


@pytest.mark.parametrize(
    ("config", "measured_as", "autocast"),
    [("llama-3.1-8b.json", "llama", False), ("gpt2.json", "gpt2", False), ("gemma-2-9b.json", "gemma2_softcap", False),
     ("gpt2.json", "llama", True), ("gpt-oss-20b.json", "gpt_oss_sinks", False)],
)  # fmt: skip
def test_eager_attention_moves_what_its_ops_move(config, measured_as, autocast):
    """Without flash attention, eager PyTorch's attention moves per score what transformers' eager attention's aten
    ops move (eager_attention_traffic_with_transformers.py): Llama's fp32 softmax, cast up and back, 32 bytes forward
    and 36 backward; GPT-2's 16-bit one 16 and 18, or Llama's under autocast; Gemma 2's soft-capping 12 and 14 more;
    gpt-oss's sinks (concatenated, the max subtracted, sliced off) 8 and 22 more.
    The causal mask's read is 2 bytes over the heads (4 measured). Megatron's fused softmax moves 8 and 16."""
    from dpcost.engine.ops import layer_ops
    from dpcost.engine.rates import EAGER_SCORES_HBM

    arch = load_model(str(HF / config)).architecture
    measured = TRAFFIC[measured_as]
    seq = 1024

    def attention(kernels):
        ops = layer_ops(arch, arch.ffn is None, seq, seq, kernels, flash=False, autocast=autocast)  # gpt-oss: MoE
        return [o for o in ops if o.name in ("attention (eager)", "attention's element-wise ops (eager)")]

    scores = arch.heads * seq * seq
    square, elementwise = attention("eager")
    mask = 2 / arch.heads - 2 / TRAFFIC["heads"]
    assert (square.bytes + elementwise.bytes) / scores == pytest.approx(measured["forward_bytes_per_score"] + mask)
    assert (square.backward_bytes + elementwise.backward_bytes) / scores == measured["backward_bytes_per_score"]
    assert (square.kernels, square.backward_kernels) == (measured["forward_kernels"], measured["backward_kernels"])
    # FlashAttention-2's standard attention's 26 bytes a score at the share fitted on them, the rest streamed
    assert (square.bytes / scores, square.backward_bytes / scores, square.hbm_share) == (12, 14, EAGER_SCORES_HBM)
    assert elementwise.kind == "memory" and elementwise.hbm_share == 1
    (fused,) = attention("fused")
    assert (fused.bytes / scores, fused.backward_bytes / scores) == (8, 16)
