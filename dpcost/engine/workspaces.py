"""The GEMM libraries' workspaces: buffers a training process allocates once through PyTorch's caching allocator and
keeps, so that torch.cuda.max_memory_allocated counts them beside the tensors (docs/sources/gpu-memory.md, "The GEMM
libraries' workspaces").

Sources:
- [T] PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp (pytorch/pytorch at 26a39059ec): a cuBLAS workspace per
  (handle, stream), from the caching allocator (getNewWorkspace); CUBLAS_WORKSPACE_CONFIG's size, unset 32 MiB on
  sm90 and 4096 KiB x 2 + 16 KiB x 8 elsewhere (parseChosenWorkspaceSize), and 32 MiB on Blackwell too (compute
  capability 10 and 12) since pytorch/pytorch pull request 175344 (2026-02-19). A handle serves one thread
  (DeviceThreadHandlePool), and training runs cuBLAS from two: the forward's, and the autograd engine's device
  thread, which runs the backward. CUBLAS_WORKSPACE_CONFIG given, its :SIZE:COUNT pairs' sum, SIZE in KiB (Megatron's
  --deterministic-mode sets :4096:8: megatron/training/determinism.py at d98e8a64dd).
- [E] Transformer Engine transformer_engine/pytorch/cpp_extensions/gemm.py (NVIDIA/TransformerEngine at d0067d0da):
  get_cublas_workspace, cached per kind: one of get_cublas_workspace_size_bytes() (32 MiB + 1 KiB from compute
  capability 9, 4 MiB before) for its GEMMs, and 3 more (_NUM_MAX_UB_STREAMS) for Userbuffers' overlapped ones;
  for grouped GEMMs (an MoE's experts as TEGroupedMLP, Megatron's --moe-grouped-gemm) one on each of its compute
  streams, tex.get_num_cublas_streams(): 4 (transformer_engine/common/util/multi_stream.cpp num_compute_streams).
Left out: cuBLASLt's 1 MiB ones and ROCm's hipBLAS sizes.
"""

from __future__ import annotations

import re

from dpcost.specs import GPUArch

__all__ = [
    "grouped_gemm_workspace_bytes",
    "te_workspace_bytes",
    "torch_cublas_workspace_bytes",
    "training_workspace_bytes",
]

MIB = 2**20
# threads that call cuBLAS in a training step: the forward's and the autograd engine's backward's [T]
CUBLAS_THREADS = 2
USERBUFFERS_WORKSPACES = 3  # TE's _NUM_MAX_UB_STREAMS [E]
GROUPED_GEMM_WORKSPACES = 4  # TE's compute streams for grouped GEMMs, tex.get_num_cublas_streams() [E]


def torch_cublas_workspace_bytes(arch: GPUArch, config: str | None = None) -> int:
    """One cuBLAS workspace of PyTorch's [T]: CUBLAS_WORKSPACE_CONFIG's, unset 32 MiB on Hopper and Blackwell,
    else ":4096:2:16:8"."""
    if config is None:
        config = ":32768:1" if arch in ("hopper", "blackwell") else ":4096:2:16:8"
    return sum(int(size) * 1024 * int(count) for size, count in re.findall(r":(\d+):(\d+)", config))


def te_workspace_bytes(arch: GPUArch) -> int:
    """One cuBLAS workspace of Transformer Engine's [E]: 32 MiB + 1 KiB from compute capability 9, else 4 MiB."""
    return 32 * MIB + 1024 if arch in ("hopper", "blackwell") else 4 * MIB


def grouped_gemm_workspace_bytes(arch: GPUArch) -> int:
    """Transformer Engine's workspaces for grouped GEMMs [E], allocated at the first one (functools.lru_cache): one
    on each of its 4 compute streams."""
    return GROUPED_GEMM_WORKSPACES * te_workspace_bytes(arch)


def training_workspace_bytes(
    arch: GPUArch,
    transformer_engine: bool,
    userbuffers: bool = False,
    grouped_gemm: bool = False,
    cublas_config: str | None = None,
) -> int:
    """What a training process's GEMM libraries keep allocated: PyTorch's cuBLAS workspace on each of its two
    threads [T] (`cublas_config`: CUBLAS_WORKSPACE_CONFIG), and where Transformer Engine runs the layers
    (Megatron-LM) its own, with Userbuffers' 3 more and the grouped GEMMs' 4 where the experts run as grouped GEMMs
    [E]."""
    torch = CUBLAS_THREADS * torch_cublas_workspace_bytes(arch, cublas_config)
    if not transformer_engine:
        return torch
    te = te_workspace_bytes(arch) * (1 + (USERBUFFERS_WORKSPACES if userbuffers else 0))
    grouped = grouped_gemm_workspace_bytes(arch) if grouped_gemm else 0
    return torch + te + grouped
