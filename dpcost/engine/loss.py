"""The loss path's memory: the tensors around the output projection and the cross-entropy, as each implementation
holds them (docs/sources/checkpointing.md, "The loss"). V is the vocabulary, per token, in bytes:

- upcast: F.cross_entropy(logits.float()) with the logits deleted before the backward (torchtitan
  train.py@9dec370 `del pred`; Hugging Face's ForCausalLMLoss upcasts the same way). The forward peaks at the bf16
  logits, their fp32 copy and the fp32 log-softmax (2 + 4 + 4 = 10V); the log-softmax output is kept (4V); the
  backward holds it, its incoming gradient and the outgoing one, all fp32 (12V).
- bf16: F.cross_entropy on the bf16 logits, which the caller keeps (litgpt's pretrain loop): logits and log-softmax
  2V each, kept; the backward adds two bf16 gradients (8V).
- chunked: torchtune's CEWithChunkedOutputLoss (num_output_chunks 8, torchtune/modules/loss at 1814feb17): the
  model returns its 8 bf16 output chunks and the loss upcasts one at a time; the fp32 log-softmax of every chunk is
  kept (4V), the forward peaks with all bf16 chunks, the fp32 log-softmaxes and one chunk's fp32 copy
  (2V + 4V + 4V/8 = 6.5V), and the backward works one chunk at a time (4V + 8V/8 = 5V).
- chunked-head: torchtitan's ChunkedLossWrapper (num_chunks 8; torchtitan/components/loss.py at b5bcd76c6), which
  the model's forward leaves the output projection to: a chunk of the hidden states at a time it projects, takes
  the upcast cross-entropy of and runs the backward of, before the next chunk and before the decoder's backward.
  No logit outlives its chunk (kept 0); a chunk's forward peaks as upcast's does (2 + 4 + 4 over 8 chunks), and
  its backward holds the fp32 log-softmax, its incoming and outgoing gradients and the chunk's bf16 logits, still
  referenced (2 + 4 + 4 + 4 over 8). Its GradAccumulator sums the chunks' gradients of the hidden states in fp32
  (4 bytes a hidden unit, both peaks); what it keeps to the decoder's backward is that gradient in bf16
  (_DecoderOutputGradientBackProp), the 2 bytes a hidden unit counted below as the projection's input. The
  largest tensor is the larger of a chunk's fp32 logits and the output head's gradient, which FSDP2 holds
  unsharded in fp32 across the chunks (gradient sync off until the last; reduce_dtype float32). Not priced: the
  chunks' loss compiled (compile's components with "loss", a fused path over 8), and the head gradient's
  accumulation traffic (about 1% of a Llama 3 8B step).
- fused: a compiled cross-entropy (torch.compile'd loss, as torchtitan and torchtune compile theirs): the bf16
  logits and a per-row log-sum-exp are kept (2V), the backward writes the bf16 logit gradients (4V); no fp32 copy
  is ever materialised.
- vocab-parallel: Megatron-LM's vocab_parallel_cross_entropy on fp32 logits (fp16_lm_cross_entropy False): the
  softmax is computed in place in the fp32 copy and kept (4V); its gradient is written over it and cast to 16 bits
  (4V + 2V = 6V; megatron/core/tensor_parallel/cross_entropy.py).
- vocab-parallel-fused: the same under --cross-entropy-loss-fusion's native implementation
  (megatron/core/fusions/fused_cross_entropy.py at d98e8a64dd), measured to hold one fp32 copy of the logits more
  (10V at both peaks): Megatron-LM's functional test gpt3_mcore_te_tp2_pp2_cross_entropy_loss_fusion peaks 0.41 GB
  above the same test without the flag on H100 (1.84 against 1.43 GB), one such copy of the last stage's 4 x 1,024
  x 25,216 logits. Its steps run under torch.compile (megatron/core/jit.py: jit_fuser) and update their fp32 input
  in place (the subtraction and exp, the division; the gradient's), which AOTAutograd's functionalization of input
  mutations computes into a new buffer and copies back: the likely cause, not read in Inductor's output.
- loss-parallel: F.cross_entropy on logits.float() split over the vocabulary under torch's loss_parallel (torchtitan
  with tensor parallelism; torch/distributed/tensor/parallel/loss.py at 2.14.1): _log_softmax computes on the local
  shard, x - max (shifted), exp(shifted) and shifted - logsumexp each a new fp32 tensor, so the forward peaks at the
  bf16 logits, their fp32 copy, shifted and one more (2 + 4 + 4 + 4 = 14V); the log-softmax output is kept (4V);
  _nll_loss_and_log_softmax_backward builds a zero-filled fp32 gradient, adds exp(x) into a new tensor and multiplies
  that by the loss's gradient into another, beside the kept output (16V). V here is the rank's shard.
- vocab-parallel-te: the same under --cross-entropy-fusion-impl te, Transformer Engine's parallel_cross_entropy
  (transformer_engine/pytorch/triton/cross_entropy.py at v2.8): its kernels write the gradient over the bf16 logits
  in place and keep them for the backward (2V at both peaks), with no fp32 copy.
Outside the loss, the final norm keeps its input (none in GPT-1 and the post-norm encoders), the output projection
its input; a prediction head before it (BertPredictionHeadTransform: dense, activation, LayerNorm) its dense layer's
input, the activation's input and the norm's; a norm after the embedding (BLOOM, BERT) its input. ALBERT's embedding
and head are embedding_size wide past the head's dense layer.
"""

from __future__ import annotations

from typing import get_args

from dpcost.engine.activations import ACT_BYTES, Kernels, norm_bytes
from dpcost.engine.params import embedding_width
from dpcost.frozen import frozen
from dpcost.options import LossImpl
from dpcost.specs import ModelArchitecture

__all__ = ["LOSS_IMPLS", "LossImpl", "LossMemory", "logit_peak_bytes", "loss_memory"]

LOSS_IMPLS: tuple[LossImpl, ...] = get_args(LossImpl)
TORCHTUNE_CHUNKS = 8  # torchtune/modules/loss/ce_chunked_output_loss.py: num_output_chunks=8
TORCHTITAN_CHUNKS = 8  # torchtitan/components/loss.py ChunkedLossWrapper.Config.num_chunks at b5bcd76c6


@frozen
class _Path:
    """Multiples of V bytes per token: kept to the backward, the forward's peak, the backward's, the largest tensor."""

    kept: float
    forward: float
    backward: float
    largest: float


PATHS = {
    "upcast": _Path(kept=4, forward=10, backward=12, largest=4),
    "bf16": _Path(kept=4, forward=4, backward=8, largest=2),
    "chunked": _Path(
        kept=4,
        forward=2 + 4 + 4 / TORCHTUNE_CHUNKS,
        backward=4 + 8 / TORCHTUNE_CHUNKS,
        largest=4 / TORCHTUNE_CHUNKS,
    ),
    "chunked-head": _Path(
        kept=0,
        forward=(2 + 4 + 4) / TORCHTITAN_CHUNKS,
        backward=(2 + 4 + 4 + 4) / TORCHTITAN_CHUNKS,
        largest=4 / TORCHTITAN_CHUNKS,
    ),
    "fused": _Path(kept=2, forward=2, backward=4, largest=2),
    "loss-parallel": _Path(kept=4, forward=2 + 4 + 4 + 4, backward=16, largest=4),
    "vocab-parallel": _Path(kept=4, forward=6, backward=6, largest=4),
    "vocab-parallel-fused": _Path(kept=4, forward=10, backward=10, largest=4),
    "vocab-parallel-te": _Path(kept=2, forward=2, backward=2, largest=2),
}


def logit_peak_bytes(impl: str) -> float:
    """Bytes a logit takes at the loss's higher peak, forward or backward (module docstring)."""
    path = PATHS[impl]
    return max(path.forward, path.backward)


@frozen
class LossMemory:
    """Bytes of one micro-batch outside the layers: kept to the backward, and at the loss's forward and backward
    peaks (each including what is kept)."""

    kept: float
    forward_peak: float
    backward_peak: float
    largest_tensor: float
    impl: str


def loss_memory(
    a: ModelArchitecture, seq_len: int, micro_batch: int, impl: str = "upcast", kernels: Kernels = "fused", tp: int = 1
) -> LossMemory:
    """The embedding's norm, the final norm, the prediction head, the output projection's input, and the logits as
    `impl` holds them (module docstring); on one of `tp` tensor-parallel ranks as torchtitan's plan leaves them
    (parallelize.py apply_tp: the final norm SequenceParallel, the output projection ColwiseParallel from the
    all-gathered sequence to vocabulary shards under loss_parallel): the final norm's input 1/tp, the projection's
    input whole, every logit tensor 1/tp of the vocabulary."""
    if impl not in PATHS:
        raise ValueError(f"loss_impl must be one of {LOSS_IMPLS}")
    tokens = seq_len * micro_batch
    width = embedding_width(a)  # ALBERT's embedding and head are narrower than the hidden state
    norm_input = norm_bytes(a, kernels) * a.hidden / tp if a.final_norm else 0
    head_transform = ACT_BYTES * (a.hidden + 2 * width) if a.head_transform != "none" else 0
    embedding_norm = ACT_BYTES * width if a.embedding_norm else 0
    outside = tokens * (embedding_norm + norm_input + head_transform + ACT_BYTES * width)
    if a.dropout > 0:
        outside += tokens * a.hidden  # the embedding's dropout mask
    path, logits = PATHS[impl], tokens * a.output_vocab / tp
    accumulated = head_gradient = 0.0
    if impl == "chunked-head":  # ChunkedLossWrapper's fp32 GradAccumulator; FSDP2's fp32 unsharded head gradient
        accumulated, head_gradient = 4.0 * a.hidden * tokens, 4.0 * a.output_vocab * width / tp
    return LossMemory(
        kept=outside + path.kept * logits,
        forward_peak=outside + path.forward * logits + accumulated,
        backward_peak=outside + path.backward * logits + accumulated,
        largest_tensor=max(path.largest * logits, head_gradient),
        impl=impl,
    )
