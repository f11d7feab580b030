"""State-space and hybrid layers (issue 21): each kind of layer holds, computes and keeps what its own
implementation does (docs/sources/ssm-families.md), not a transformer layer's. Expected values are written out from
the shapes, by hand, as the docstrings show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpcost.catalog import load_model
from dpcost.cli import app
from dpcost.engine.activations import Kernels, kv_cache_bytes, layer_tensors, recurrent_state_bytes
from dpcost.engine.compute import attention_flops, recurrence_flops
from dpcost.engine.params import count_params
from dpcost.specs import ModelArchitecture

CONFIGS = Path(__file__).parent / "reference" / "hf-configs"


def arch(name: str) -> ModelArchitecture:
    a = load_model(str(CONFIGS / name)).architecture
    assert a is not None
    return a


def test_nemotron_h_reads_its_pattern_as_one_mixer_per_layer() -> None:
    """hybrid_override_pattern of Nemotron-H-8B: 24 Mamba-2 layers (M), 4 attention (*), 24 MLP-only (-)."""
    a = arch("nemotron-h-8b-base-8k.json")
    kinds = [a.layer_kind(i)[:2] for i in range(a.layers)]
    assert kinds.count(("mamba", "none")) == 24
    assert kinds.count(("attention", "none")) == 4
    assert kinds.count(("none", "dense")) == 24
    assert a.attention_layers == 4


def test_mamba2_layer_parameters_by_hand() -> None:
    """Mamba-Codestral-7B, one Mamba2Mixer: in_proj 4096 x (2 x 8192 + 2 x 8 x 128 + 128) = 76,021,760; conv1d
    10,240 x 4 + 10,240 bias = 51,200; dt_bias, A_log, D 3 x 128; gated norm 8,192; out_proj 8,192 x 4,096 =
    33,554,432; with the layer's RMSNorm (4,096): 109,640,064. The model card's 7,285,403,648 is 64 of them, two
    untied 32,768 x 4,096 embeddings and the final norm."""
    c = count_params(load_model(str(CONFIGS / "mamba-codestral-7b.json")))
    assert {b.params for b in c.blocks} == {109_640_064}
    assert c.total == 7_285_403_648


def test_recurrence_flops_by_hand() -> None:
    """Per token and layer, forward. Mamba-2 (Codestral, chunk 256, 8 groups of N = 128, I = 8,192):
    2 x 256 x (8 x 128 + 8,192) + 4 x 128 x 8,192 = 8,912,896. Mamba-1 (2.8B, D = 5,120, N = 16): 9 x 5,120 x 16 +
    5,120 = 742,400. Gated DeltaNet (Qwen3-Next, chunk 64, 32 value heads, d_k = d_v = 128): 32 x (6 x 64 x 128 +
    4 x 64 x 128 + 6 x 128 x 128) = 5,767,168, in 36 of its 48 layers."""
    assert recurrence_flops(arch("mamba-codestral-7b.json")) == 64 * 8_912_896
    assert recurrence_flops(arch("mamba-2.8b-hf.json")) == 64 * 742_400
    assert recurrence_flops(arch("qwen3-next-80b-a3b-thinking.json")) == 36 * 5_767_168
    assert recurrence_flops(arch("mamba-codestral-7b.json"), decode=True) == 64 * 4 * 128 * 8192


def test_only_attention_layers_attend() -> None:
    """The score and value matmuls run in Nemotron-H-8B's 4 attention layers (32 heads of 128), not its 52:
    2 x 4 x 32 x 256 x T; a pure Mamba model has none."""
    assert attention_flops(arch("nemotron-h-8b-base-8k.json"), 4096) == 2 * 4 * 32 * 256 * 4096
    assert attention_flops(arch("mamba-2.8b-hf.json"), 4096) == 0


def test_serving_holds_kv_for_attention_layers_and_a_state_for_the_rest() -> None:
    """Nemotron-H-8B, 8 sequences of 4,096 tokens: K and V of 8 heads x 128 in 4 layers, 2 bytes each
    (4 x 2 x 8 x 128 x 2 x 4,096 x 8 = 536,870,912), and each Mamba layer's state, whatever the context: SSM
    8,192 x 128 in fp32 and the conv window 10,240 x 4 in bf16, as transformers 5.25's cache holds what
    NemotronHMamba2Mixer returns (24 x (4,194,304 + 81,920) x 8 = 821,035,008)."""
    a = arch("nemotron-h-8b-base-8k.json")
    assert kv_cache_bytes(a, 4096, 8) == 536_870_912 + 821_035_008
    result = CliRunner().invoke(
        app,
        ["estimate", "-m", str(CONFIGS / "nemotron-h-8b-base-8k.json"), "--dp", "8", "--mode", "inference",
         "--batch", "8", "--seq-len", "4096", "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["inference"]["kv_cache_bytes"] == 536_870_912 + 821_035_008


def test_a_mamba2_layer_keeps_what_mamba_ssms_fused_kernel_saves() -> None:
    """MambaSplitConv1dScanCombinedFn saves in_proj's output zxbcdt (2 x 8,192 + 2 x 8 x 128 + 128 = 18,560) and
    the scan's output (8,192), 2 bytes each, and recomputes the rest (ssd_combined.py v2.2.6.post3 797-836):
    53,504 bytes per token where transformers hands it the gated norm and out_proj too (eager: the FSDP/DDP runs of
    transformers' models). Megatron-Core runs the norm and out_proj outside it (mamba_mixer.py 690-713 at
    core_v0.17.0), which keep the norm's input and out_proj's input (8,192 each, 2 bytes) and 8 fp32 rstds:
    10I + 4GN + 2H + 4G = 86,304 (docs/sources/mamba-hybrid-layouts.md section 3); with the layer's fused pre-norm
    keeping its input and output (2 x 4,096, 2 bytes) that is 102,688 bytes per token, the note's figure."""
    a = arch("mamba-codestral-7b.json")

    def ssm_bytes(kernels: Kernels) -> float:
        layer = layer_tensors(a, False, kernels=kernels, mixer="mamba", mlp=False)
        return sum(t.bytes_per_token for t in layer.tensors if t.saved and t.name.startswith("SSM"))

    assert ssm_bytes("eager") == ssm_bytes("compiled") == (18_560 + 8_192) * 2
    assert ssm_bytes("fused") == 86_304
    assert layer_tensors(a, False, mixer="mamba", mlp=False).saved_bytes(1, 1) == 102_688


@pytest.mark.parametrize(
    ("flags", "flag"),
    [(["--tp", "2"], "--tp"), (["--pp", "2"], "--pp"), (["--compute-model", "ops"], "--compute-model")],
)
def test_what_is_not_costed_yet_is_refused_by_name(flags: list[str], flag: str) -> None:
    result = CliRunner().invoke(app, ["estimate", "-m", str(CONFIGS / "jamba-1.5-mini.json"), "--dp", "8", *flags])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dpcost: error: {flag}: ") and result.stderr.count("\n") == 1


def test_plan_searches_a_hybrid_as_pure_data_parallelism() -> None:
    """Jamba's Mamba-1 layers have no per-op times, so no layout (a Mamba-2 hybrid's: test_mamba_layers)."""
    result = CliRunner().invoke(
        app, ["plan", "-m", str(CONFIGS / "jamba-1.5-mini.json"), "--gpus", "64", "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr
    plans = json.loads(result.stdout)["plans"]
    assert plans and all(p["tp"] == p["pp"] == p["cp"] == p["ep"] == 1 for p in plans)


def _v32() -> ModelArchitecture:
    """DeepSeek-V3.2-Exp's config.json is V3's with model_type deepseek_v32 and the indexer's three keys."""
    from dpcost.catalog import model_from_hf_config

    cfg = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    cfg.update(model_type="deepseek_v32", architectures=["DeepseekV32ForCausalLM"], index_n_heads=64,
               index_head_dim=128, index_topk=2048)  # fmt: skip
    a = model_from_hf_config(cfg, "v32.json").architecture
    assert a is not None
    return a


def test_deepseek_v32_adds_its_indexer_to_every_layer() -> None:
    """inference/model.py Indexer at H 7168, q_lora_rank 1536: wq_b 1536 x 8192 + wk 7168 x 128 + k_norm 256 +
    weights_proj 7168 x 64 = 13,959,424 per layer; 851,524,864 over V3's 61 layers, and one more in the MTP module."""
    from dpcost.specs import ModelSpec

    v3 = count_params(load_model(str(CONFIGS / "deepseek-v3.json")))
    v32 = count_params(ModelSpec(name="v32", title="v32", architecture=_v32()))
    assert v32.total - v3.total == 851_524_864
    assert v32.mtp - v3.mtp == 13_959_424


def test_deepseek_sparse_attention_reads_its_top_k_keys() -> None:
    """At 128K tokens, attention reads 2,048 keys per query (128 heads of 192 + 128) and the indexer scores all
    131,072 with 64 heads of 128: 2 x 61 x (128 x 320 x 2048 + 64 x 128 x 131072), against V3's
    2 x 61 x 128 x 320 x 131072; at 2K tokens both read every key."""
    v32, v3 = _v32(), arch("deepseek-v3.json")
    t = 131_072
    assert attention_flops(v32, t) == 2 * 61 * (128 * 320 * 2048 + 64 * 128 * t)
    assert attention_flops(v3, t) == 2 * 61 * 128 * 320 * t
    assert attention_flops(v32, 2048) == 2 * 61 * (128 * 320 * 2048 + 64 * 128 * 2048)


def test_falcon_h1_runs_attention_and_mamba2_side_by_side() -> None:
    """FalconH1Config's defaults (docs/sources/ssm-families.md), by hand: the Mamba-2 mixer of mamba_d_ssm 1024 in
    128 heads, N 256, one group: in_proj 4096 x (1024 + 1536 + 128) = 11,010,048, conv 1536 x 4 + 1536, dt_bias,
    A_log and D 3 x 128, no gated norm (mamba_rms_norm false), out_proj 1024 x 4096: 15,212,416; attention (32
    heads, 8 KV of 128) 41,943,040; gated MLP 3 x 4096 x 14336 = 176,160,768; two norms 8,192: 233,324,416 a layer,
    32 of them, two untied 128,000 x 4096 embeddings and the final norm: 8,514,961,408."""
    from dpcost.catalog import model_from_hf_config

    spec = model_from_hf_config({"model_type": "falcon_h1"}, "config.json")
    c = count_params(spec)
    assert {b.params for b in c.blocks} == {233_324_416}
    assert c.total == 8_514_961_408
    a = spec.architecture
    assert a is not None and a.attention_layers == 32 and a.mixer(0) == "attention+mamba"


def test_nemotron_3_ultra_reads_layers_block_type_not_the_default_pattern() -> None:
    """Nemotron 3 Ultra's file lists its 108 layers only as layers_block_type (transformers 5.24.0
    configuration_nemotron_h.py; the older names mamba and attention): 48 Mamba-2, 12 attention, 48 MoE. Without
    it a reader would fall back on NemotronHConfig's 52-layer default pattern."""
    cfg = json.loads((CONFIGS / "nemotron-3-ultra-550b-a55b.json").read_text())
    a = arch("nemotron-3-ultra-550b-a55b.json")
    kinds = [a.layer_kind(i)[:2] for i in range(a.layers)]
    assert a.layers == len(cfg["layers_block_type"]) == 108
    assert kinds.count(("mamba", "none")) == cfg["layers_block_type"].count("mamba") == 48
    assert kinds.count(("attention", "none")) == cfg["layers_block_type"].count("attention") == 12
    assert kinds.count(("none", "moe")) == cfg["layers_block_type"].count("moe") == 48


def test_latent_moe_experts_work_in_the_latent_width() -> None:
    """Nemotron 3 Super's NemotronHMoE (modeling_nemotron_h.py, 5.24.0): each routed expert is up_proj
    (2,688 x 1,024) and down_proj (1,024 x 2,688) in the latent width, behind fc1_latent_proj (4,096 -> 1,024) and
    fc2_latent_proj (1,024 -> 4,096), no biases; the shared expert (5,376) works on the full width; the router is
    512 x 4,096. One MoE layer: 512 x 5,505,024 + 8,388,608 + 44,040,192 + 2,097,152 = 2,873,098,240, plus its
    norm (4,096)."""
    from dpcost.engine.params import block_tensors

    a = arch("nemotron-3-super-120b-a12b.json")
    assert a.moe is not None and a.moe.latent == 1024
    moe_layer = next(i for i in range(a.layers) if a.layer_kind(i)[:2] == ("none", "moe"))
    tensors = block_tensors(a, True, "none", "moe")
    assert sum(tensors) == 2_873_098_240 + 4096
    assert tensors.count(2688 * 1024) == 2 * 512  # every expert's up and down
    assert tensors.count(4096 * 1024) == 2  # the two latent projections
    assert count_params(load_model(str(CONFIGS / "nemotron-3-super-120b-a12b.json"))).blocks[moe_layer].params == (
        2_873_098_240 + 4096
    )


def test_latent_moe_dispatches_latent_wide_tokens() -> None:
    """Megatron-Core's MoELayer (moe_layer.py) applies fc1_latent_proj before the token dispatcher, which "only sees
    latent-dim tensors": an all-to-all message is tokens x top-k x latent, not x hidden (here 4,096 tokens x 22 x
    2,048 x 2 bytes for Ultra)."""
    from dpcost.engine.layout import Layout
    from dpcost.engine.layout_step import ep_calls

    a = arch("nemotron-3-ultra-550b-a55b.json")
    calls = ep_calls(a, Layout(ep=8, dp=8), micro_batch=1, seq_len=4096, act_bytes=2, sequence_parallel=False)
    assert calls[0].op == "all_to_all"
    assert calls[0].message_bytes == 4096 * 22 * 2048 * 2


def test_qwen3_5_dense_has_an_mlp_in_every_layer_and_no_experts() -> None:
    """Qwen3.5-27B (modeling_qwen3_5.py, transformers 5.24.0: Qwen3_5DecoderLayer builds Qwen3_5MLP in every layer):
    64 layers of a gated MLP of 17,408 over 5,120, no MoE; read as Qwen3-Next, whose class defaults to 512 experts,
    the same keys would count 268B. Its MTP layer is one full-attention layer (mtp_num_hidden_layers 1)."""
    a = arch("qwen3.5-27b.json")
    assert a.moe is None and a.ffn == 17408
    assert [a.layer_kind(i)[1] for i in range(a.layers)] == ["dense"] * 64
    assert a.mixers.count("deltanet") == 48 and a.mixers.count("attention") == 16
    assert a.mtp_layers == 1
    dense_mlp = 3 * 5120 * 17408
    assert count_params(load_model(str(CONFIGS / "qwen3.5-27b.json"))).total == pytest.approx(26.9e9, rel=1e-3)
    assert dict(count_params(load_model(str(CONFIGS / "qwen3.5-27b.json"))).components)["dense MLP"] == 64 * dense_mlp


def test_qwen3_5_moe_has_experts_in_every_layer_whatever_mlp_only_layers_says() -> None:
    """Qwen3_5MoeTextConfig deletes mlp_only_layers and decoder_sparse_step (modular_qwen3_5_moe.py) and every decoder
    layer builds the sparse block: a file that still carries them does not make a layer dense."""
    cfg = json.loads((CONFIGS / "qwen3.5-35b-a3b.json").read_text())
    cfg["text_config"].update(mlp_only_layers=[0, 1], decoder_sparse_step=2)
    from dpcost.catalog import model_from_hf_config

    a = model_from_hf_config(cfg, "qwen3.5.json").architecture
    assert a is not None and a.moe is not None
    assert a.moe_layers == a.layers == 40


def test_lfm2_short_convolution_layers_by_hand() -> None:
    """Lfm2ShortConv (modeling_lfm2.py, transformers 5.24.0): in_proj 2,048 x 6,144, a depthwise Conv1d of 3 taps
    over 2,048 channels, out_proj 2,048 x 2,048, no biases: 4 x 2,048^2 + 3 x 2,048 = 16,783,360. LFM2's MLP is
    block_ff_dim (12,288, over intermediate_size's 8,192) cut to two thirds and rounded up to 256: 8,192 wide."""
    a = arch("lfm2-1.2b.json")
    assert a.mixers.count("conv") == 10 and a.mixers.count("attention") == 6
    assert a.ffn == 8192
    assert dict(count_params(load_model(str(CONFIGS / "lfm2-1.2b.json"))).components)["short convolutions"] == (
        10 * 16_783_360
    )


def _minimax_text_01() -> dict[str, object]:
    """MiniMax-Text-01 as MiniMax's own config.json spells it (remote code): attn_type_list, 1 softmax and 0
    lightning, a softmax layer every eighth."""
    return {
        "model_type": "minimax_text_01",
        "architectures": ["MiniMaxText01ForCausalLM"],
        "hidden_size": 6144,
        "intermediate_size": 9216,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_local_experts": 32,
        "num_experts_per_tok": 2,
        "vocab_size": 200064,
        "attn_type_list": [1 if (i + 1) % 8 == 0 else 0 for i in range(80)],
    }


def test_minimax_reads_its_own_files_attention_kinds(tmp_path: Path) -> None:
    """MiniMax's own file (attn_type_list, its architectures name) counts what transformers builds from the same
    shapes under layer_types (resolved/aliased-families.json: 456,089,655,296, the card's 456B), and its active
    parameters less the input embedding and the output head are the card's 45.9B: 47,174,113,280 - 200,064 x 6,144."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_minimax_text_01()))
    c = count_params(load_model(str(path)))
    assert c.total == 456_089_655_296
    assert round((c.active_excl_embedding - 200_064 * 6_144) / 1e8) == 459


STATES = json.loads((CONFIGS / "resolved" / "recurrent-state-dtypes.json").read_text())
STATE_DTYPES = STATES["families"]
BYTES = {"float32": 4, "bfloat16": 2}


@pytest.mark.parametrize("family", sorted(STATES["configs"]))
def test_the_decode_state_is_what_transformers_cache_holds(tmp_path: Path, family: str) -> None:
    """Every recurrent state and convolution window transformers 5.25.0's decode cache holds for one sequence of a
    tiny bf16 model of each family (resolved/recurrent-state-dtypes.json: each cache tensor's elements, at its
    dtype), byte for byte: dpcost's recurrent_state_bytes of the same config."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": family, **STATES["configs"][family]}))
    a = load_model(str(path)).architecture
    assert a is not None
    held = sum(n * BYTES[STATE_DTYPES[family][name][0]] for name, n in STATES["elements"][family].items())
    assert recurrent_state_bytes(a) == held


@pytest.mark.parametrize(
    ("name", "family", "state", "window"),
    [
        ("mamba-2.8b-hf.json", "mamba", 64 * 5120 * 16, 64 * 5120 * 4),  # 64 layers: inner x N, inner x kernel
        ("nemotron-h-8b-base-8k.json", "nemotron_h", 24 * 8192 * 128, 24 * 10240 * 4),
        ("qwen3-next-80b-a3b-thinking.json", "qwen3_next", 36 * 32 * 128 * 128, 36 * (2 * 16 * 128 + 32 * 128) * 4),
    ],
)
def test_the_decode_state_takes_the_dtypes_transformers_keeps_it_in(
    name: str, family: str, state: int, window: int
) -> None:
    """A bf16 forward in transformers 5.25.0 (resolved/recurrent-state-dtypes.json) keeps Mamba's, Mamba-2's and
    gated DeltaNet's recurrent state in fp32 and their convolution windows in bf16: Mamba 2.8B's 64 layers hold
    5,120 x 16 of state and 5,120 x 4 of window each, Nemotron-H-8B's 24 Mamba layers 8,192 x 128 and 10,240 x 4,
    Qwen3-Next-80B's 36 DeltaNet layers 32 x 128 x 128 and (2 x 16 x 128 + 32 x 128) x 4."""
    dtypes = STATE_DTYPES[family]
    (recurrent,), (conv,) = dtypes["recurrent_states"], dtypes["conv_states"]
    assert recurrent_state_bytes(arch(name)) == state * BYTES[recurrent] + window * BYTES[conv]


def test_lightning_attention_flops_and_state_by_hand(tmp_path: Path) -> None:
    """MiniMax-Text-01's 70 lightning layers of 64 heads, d = 128, in blocks of 256 (Qin et al. 2024, the blockwise
    form): per token and layer 64 x (4 x 256 x 128 + 4 x 128 x 128) = 12,582,912 FLOPs forward, 64 x 4 x 128 x 128
    when decoding; and a state of 64 x 128 x 128 per layer, in the model's dtype as MiniMaxCache keeps it
    (resolved/recurrent-state-dtypes.json), with no convolution window."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_minimax_text_01()))
    a = load_model(str(path)).architecture
    assert a is not None
    assert recurrence_flops(a) == 70 * 12_582_912
    assert recurrence_flops(a, decode=True) == 70 * 64 * 4 * 128 * 128
    assert STATE_DTYPES["minimax"]["linear_cache"] == ["bfloat16"]
    assert recurrent_state_bytes(a) == 70 * 64 * 128 * 128 * 2
    assert attention_flops(a, 4096) == 2 * 10 * 64 * 256 * 4096


def test_jet_nemotron_2b_holds_computes_and_caches_what_its_jetblocks_do() -> None:
    """Jet-Nemotron-2B (NVlabs/Jet-Nemotron @94cbd124, jet_block.py and dynamic_conv.py): 24 JetBlocks of 12 heads,
    K = 12 x 96 = 1,152, V = int(1,152 x 2.6666666667) = 3,072. One holds q and k (1,536 x 1,152 each), v, g and o
    (1,536 x 3,072 each), b and a (1,536 x 12 each), A_log and dt_bias (12 each), the kernel generator (w1 1,536 x 384,
    w2 384 x 12,288 and its 12,288 bias) and the gated norm (256): 23,052,568. The 2 attn and 2 swa layers are Qwen2's
    attention (q 1,536 x 1,536 and k, v 1,536 x 256, biased; o unbiased): 5,507,072. Every layer adds a SwiGLU of
    8,960 and two norms; the embedding is tied. Forward FLOPs a token beside 2N: the chunked gated delta rule, 12 x
    (64 x (6 x 96 + 4 x 256) + 6 x 96 x 256), and the generated convolution, 2 x 4 x 3,072; the decode cache an fp32
    state of 12 x 96 x 256 and a bf16 window of 3,072 x 4 per JetBlock (JetNemotronCache)."""
    a = arch("jet-nemotron-2b.json")
    jet = 2 * 1536 * 1152 + 2 * 1536 * 3072 + 3072 * 1536 + 2 * 1536 * 12 + 2 * 12 + 1536 * 384 + 384 * 12288
    jet += 12288 + 256
    attention = 2 * 1536 * 1536 + 1536 + 2 * (1536 * 256 + 256)
    rest = 3 * 1536 * 8960 + 2 * 1536
    assert jet == 23_052_568 and attention == 5_507_072
    total = 24 * (jet + rest) + 4 * (attention + rest) + 151936 * 1536 + 1536
    assert count_params(load_model(str(CONFIGS / "jet-nemotron-2b.json"))).total == total == 1_964_806_208
    assert a.mixers.count("deltanet") == 24 and a.attention_layers == 4
    assert a.local_attention is not None and (a.local_attention.size, a.local_attention.layers) == (1152, (20, 21))
    per_layer = 12 * (64 * (6 * 96 + 4 * 256) + 6 * 96 * 256) + 2 * 4 * 3072
    assert recurrence_flops(a) == 24 * per_layer
    assert recurrence_flops(a, decode=True) == 24 * (12 * 6 * 96 * 256 + 2 * 4 * 3072)
    assert recurrent_state_bytes(a) == 24 * (12 * 96 * 256 * 4 + 3072 * 4 * 2)
    # What one JetBlock's forward keeps a token, in bf16 unless said: q and k's projections and their SiLU (1,152
    # each), v's projection, the generator's w1 output and SiLU (384 each), the kernels (3,072 x 4), the convolution's
    # output before and after its SiLU, beta (12), the softplus's fp32 input and output (12 each), the fp32 decay
    # (12), the recurrence's, g_proj's and the norm's outputs (3,072 each): b's, a's and o's projections are not kept;
    # fla's kernel adds the fp32 rstd of q and k and the gated norm its own (12 each) and its solve A (64 x 12);
    # beside them the block's input norm keeps its input and output (1,536 each)
    kept = 2 * (2 * 1152 + 2 * 1152 + 3072 + 2 * 384 + 3072 * 4 + 2 * 3072 + 12 + 3 * 3072 + 64 * 12)
    kept += 2 * 4 * 12 + 4 * 12 + 3 * 4 * 12
    assert layer_tensors(a, False, mixer="deltanet", mlp=False).saved_bytes(1, 1) - 2 * 2 * 1536 == kept


def test_a_jet_nemotron_files_head_dim_sets_its_attention_layers_width(tmp_path: Path) -> None:
    """JetNemotronAttention takes getattr(config, "head_dim", hidden / heads): a file's head_dim of 64 narrows the 4
    attention layers' q, k, v and o (12 heads, 2 KV heads, q/k/v biased), not the JetBlocks."""
    cfg = json.loads((CONFIGS / "jet-nemotron-2b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, "head_dim": 64}))

    def attention(head_dim: int) -> int:
        q, kv = 12 * head_dim, 2 * head_dim
        return 1536 * q + q + 2 * (1536 * kv + kv) + q * 1536

    narrower = 1_964_806_208 - 4 * (attention(128) - attention(64))
    assert count_params(load_model(str(path))).total == narrower


@pytest.mark.parametrize(
    ("section", "change", "said"),
    [
        ("jet", {"expand_v": 2.6}, "efficient_attention_config.jet.expand_v: head_dim (96) x expand_v must be a whole"),
        ("jet", {"num_heads": 0}, "efficient_attention_config.jet.num_heads: a whole number from 1"),
        ("swa", None, "efficient_attention_config.swa: a mapping of its keys, which the swa layers of layer_types"),
    ],
)
def test_a_jet_nemotron_file_its_classes_refuse_is_refused(
    section: str, change: dict | None, said: str, tmp_path: Path
) -> None:
    """JetBlock raises where head_dim x expand_v is not whole (96 x 2.6), JetNemotronDecoderLayer where layer_types
    names swa layers without a swa section: dpcost refuses both, naming the key (exit 2)."""
    cfg = json.loads((CONFIGS / "jet-nemotron-2b.json").read_text())
    if change is None:
        del cfg["efficient_attention_config"][section]
    else:
        cfg["efficient_attention_config"][section].update(change)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    result = CliRunner().invoke(app, ["estimate", "--model", str(path), "--dp", "8"])
    assert result.exit_code == 2 and said in result.output, result.output


def test_a_gated_deltanet_layer_keeps_what_its_projections_and_flas_kernels_save() -> None:
    """Qwen3-Next-80B's DeltaNet (16 key heads and 32 value heads of 128; K = 2,048, V = 4,096), bytes a token in
    bf16 unless said: in_proj_qkvz's output (2K + 2V) and in_proj_ba's (2 x 32), the convolution's output that fla's
    chunk_gated_delta_rule keeps as its q, k and v (2K + V), the fp32 decay (32), the fp32 rstd of 16 query and 16 key
    heads and the gated norm's of 32 value heads, the kernel's triangular solve A (64 a value head: its
    save_for_backward under use_qk_l2norm_in_kernel), the recurrence's and the gated norm's outputs (V each);
    beside them the block's input norm keeps its input and output (2,048 each). out_proj's output is not kept."""
    a = arch("qwen3-next-80b-a3b-thinking.json")
    keys, values = 2048, 4096
    kept = 2 * (2 * keys + 2 * values + 2 * 32 + 2 * keys + values + 64 * 32 + 2 * values) + 4 * 32 + 4 * (16 + 16 + 32)
    assert layer_tensors(a, True, mixer="deltanet", mlp=False).saved_bytes(1, 1) - 2 * 2 * 2048 == kept
