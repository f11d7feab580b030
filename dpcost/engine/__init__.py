"""The pure engine: typed functions from specs to numbers. No printing, no file I/O, no CLI or YAML imports.

params.py       parameter counts from the architecture
collectives.py  collective time per algorithm, protocol and tier (NCCL's model on a tiered fabric)
activations.py  activation memory (Korthikanti et al. 2022) and the KV cache
memory.py       model states by ZeRO stage and recipe, buffers, fit; DeepSpeed's estimators
compute.py      FLOPs per token and compute time
step.py         the training-step timeline: buckets, accumulation, ZeRO-3 gathers, exposed communication
estimate.py     combines them into a Report
"""
