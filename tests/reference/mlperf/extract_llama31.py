#!/usr/bin/env python3
"""Extract per-system step times and launch settings for MLPerf Training
llama31_405b / llama31_8b from bare git mirrors of mlcommons/training_results_v5.0
and _v5.1.  Stdlib only.  Usage:

    python3 extract_llama31.py V50_GIT_DIR V51_GIT_DIR > llama31-training.csv
"""

import contextlib
import csv
import io
import json
import os
import re
import statistics
import subprocess
import sys

HEADER = """\
MLPerf Training llama31_405b / llama31_8b: per-system optimizer-step times and launch settings (one row per results
directory). Sources: github.com/mlcommons/training_results_v5.0 @ {v50};
github.com/mlcommons/training_results_v5.1 @ {v51}.
step_time_s: per result_N.txt take all per-step tracked_stats.train_step_time values (custom_callbacks; the per-block
  averages logged by mlperf_common's callback are skipped), drop the first two logged values, take the median; then
  the median over files. step_time_min_s/max_s = min/max of the per-file medians; steps_counted = total steps used.
  8b logs sample one step every N steps.
MLPerf train_step_time is the wall time of ONE optimizer step, i.e. one global batch (global_batch sequences of
  seq_len tokens).
gpu/nodes/gpus_per_node: <submitter>/systems/<system>.json; global_batch/seq_len: log; config_file: config_*.sh
  matching GPUs, log GBS and gradient_accumulation_steps (tie-break in notes); tp..cross_entropy: effective env of
  that config after following every `source` (later assignments win). dp = GPUs/(tp*pp*cp). vp = INTERLEAVED_PIPELINE
  (1 if unset/null). precision nvfp4 = FP4 configs (fp8_recipe then holds FP4_RECIPE); cuda_graph full =
  FULL_CUDA_GRAPH=1, mcore = MCORE_CUDA_GRAPH only.
  Logs without per-step train_step_time (AMD/ROCm submissions) have empty step-time cells. notes: paths relative to
  the mirror, how the config was chosen (log ':::DLPAL' DGXSYSTEM, README-<system>.md, names), and disagreements
  with the log.
  sequence_parallel and cross_entropy: SEQ_PARALLEL, CROSS_ENTROPY_LOSS_FUSION and CE_FUSION_IMPL, unset taking
  conf/custom.yaml's defaults (True, True, 'native'); cross_entropy 'unfused' where the fusion is off. A results
  directory whose files are byte for byte another's (a later round resubmitting them) says 'duplicate of' in its
  notes: one measurement.
Regenerate: python3 extract_llama31.py <v5.0 git dir> <v5.1 git dir>"""
BENCHES = ("llama31_405b", "llama31_8b")
COLS = [
    "round",
    "submitter",
    "system",
    "benchmark",
    "gpu",
    "gpus",
    "nodes",
    "gpus_per_node",
    "config_file",
    "tp",
    "pp",
    "vp",
    "cp",
    "dp",
    "micro_batch",
    "global_batch",
    "seq_len",
    "precision",
    "fp8_recipe",
    "fp8_attention",
    "tp_overlap",
    "fp8_param_gather",
    "cuda_graph",
    "asym_pp_embed",
    "asym_pp_loss",
    "recompute",
    "dist_optimizer",
    "sequence_parallel",
    "cross_entropy",
    "step_time_s",
    "step_time_min_s",
    "step_time_max_s",
    "result_files",
    "steps_counted",
    "notes",
]
GPU_TOKENS = ("GB300", "GB200", "B300", "B200", "H200", "H100", "MI355X", "MI350X", "MI325X")
# AMD (non-NeMo) configs use other variable names
ALIASES = {
    "TP": "TENSOR_MODEL_PARALLEL",
    "PP": "PIPELINE_MODEL_PARALLEL",
    "CP": "CONTEXT_PARALLEL",
    "MBS": "MICRO_BATCH_SIZE",
    "NNODES": "DGXNNODES",
    "GPUS_PER_NODE": "DGXNGPU",
}


class Repo:
    def __init__(self, gitdir):
        self.gitdir = gitdir
        self.head = self.git("rev-parse", "HEAD").strip()
        self.files = self.git("ls-tree", "-r", "--name-only", "HEAD").split("\n")
        self._cache = {}

    def git(self, *args):
        return subprocess.run(
            ["git", "--git-dir=" + self.gitdir, *args], capture_output=True, text=True, errors="replace", check=True
        ).stdout

    def show(self, path):
        if path not in self._cache:
            self._cache[path] = self.git("show", "HEAD:" + path)
        return self._cache[path]


def mllog(text):
    for line in text.splitlines():
        i = line.find(":::MLLOG ")
        if i >= 0:
            with contextlib.suppress(ValueError):
                yield json.loads(line[i + 9 :])


LOG_KEYS = ("fp4", "fp8", "fp8_recipe", "fp8_dot_product_attention", "cuda_graph_scope")


def log_evidence(text):
    """DGXSYSTEM echoed by run.sub (':::DLPAL ... <DGXSYSTEM>') and a few fields of the
    NeMo model-config dump, when the submitter kept the full stdout."""
    ev = {}
    m = re.search(r"^:::DLPAL .* '?([\w.+-]+?)'?\s*$", text, re.M)
    if m:
        ev["DGXSYSTEM"] = m.group(1)
    for k in LOG_KEYS:
        m = re.search(rf"^(?:\s*\d+:)?\s+{k}=([^,\n]+),\s*$", text, re.M)
        if m:
            ev[k] = m.group(1).strip("'")
    return ev


def parse_result(text):
    """Per-step train_step_time values (the per-block averages that mlperf_common's
    logging callback also emits as tracked_stats are skipped) plus run metadata."""
    times, meta = [], {}
    for e in mllog(text):
        k, v, md = e.get("key"), e.get("value"), e.get("metadata") or {}
        if k == "tracked_stats" and isinstance(v, dict) and "train_step_time" in v:
            if "step" in md and "mlperf_common" not in str(md.get("file", "")):
                times.append(float(v["train_step_time"]))
        elif k in ("global_batch_size", "gradient_accumulation_steps", "max_sequence_length", "submission_platform"):
            meta.setdefault(k, v)
    return times, meta


# ---- minimal bash evaluator for config_*.sh (export/assign/source; if-blocks skipped) ----
def expand(s, env):
    def sub(m):
        name, op, default = m.group(1) or m.group(4), m.group(2), m.group(3)
        val = env.get(name, "")
        if op in (":-", ":=") and val == "":
            val = expand(default or "", env)
            if op == ":=":
                env[name] = val
        return val

    return re.sub(r"\$\{(\w+)(?:(:[-=])([^}]*))?\}|\$(\w+)", sub, s)


def split_comment(line):
    q = None
    for i, c in enumerate(line):
        if c in "'\"" and q in (None, c):
            q = None if q else c
        elif c == "#" and q is None and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def run_config(repo, path, env, sourced, bench_root):
    depth = 0
    for raw in repo.show(path).splitlines():
        line = split_comment(raw).strip()
        if not line:
            continue
        if re.match(r"(if|case|for|while)\b", line):
            depth += 1
            continue
        if re.match(r"(fi|esac|done)\b", line):
            depth -= 1
            continue
        if depth:
            continue
        m = re.match(r"(?:source|\.)\s+.*?([\w.+-]+\.sh)\W*$", line)
        if m:
            name = m.group(1)
            if name == "config_mounts.sh":
                continue
            target = resolve_source(repo, os.path.dirname(path), name, bench_root)
            sourced.append(target or ("MISSING:" + name))
            if target:
                run_config(repo, target, env, sourced, bench_root)
            continue
        m = re.match(r":\s+\"?\$\{(\w+):=([^}]*)\}\"?", line)
        if m:
            if not env.get(m.group(1)):
                env[m.group(1)] = expand(m.group(2), env).strip("\"'")
            continue
        m = re.match(r"(?:export\s+)?(\w+)=(.*)$", line)
        if m:
            val = m.group(2).strip().rstrip(";").strip()
            if val.startswith("$(") or val.startswith("$(("):
                continue  # command substitution / arithmetic: not needed here
            if len(val) >= 2 and val[0] == val[-1] and val[0] in "'\"":
                val = val[1:-1]
            env[m.group(1)] = expand(val, env)


def resolve_source(repo, d, name, bench_root):
    """Same directory first; else the nearest file of that name elsewhere in the benchmark tree."""
    if os.path.join(d, name) in repo.file_set:
        return os.path.join(d, name)
    bench = bench_root.split("/")[-1]
    cands = [
        f
        for f in repo.files
        if os.path.basename(f) == name and (f.startswith(bench_root + "/") or f"/benchmarks/{bench}/" in f)
    ]
    cands.sort(
        key=lambda f: (
            not f.startswith(bench_root + "/"),
            not f.startswith("NVIDIA/"),
            not d.startswith(os.path.dirname(f)),
            len(f),
        )
    )
    return cands[0] if cands else None


def truthy(v):
    return str(v).strip().lower() in ("1", "true", "yes", "on")


def yn(v):
    return "yes" if truthy(v) else "no"


def gpu_of(s):
    s = s.upper()
    return next((t for t in GPU_TOKENS if t in s), "")


def effective(repo, cfg, bench_root):
    env, sourced = {}, []
    run_config(repo, cfg, env, sourced, bench_root)
    for a, b in ALIASES.items():
        if a in env and b not in env:
            env[b] = env[a]
    env.setdefault("DGXNGPU", "8")  # default of trainer.devices in the NeMo custom.yaml
    env["_sourced"] = sourced
    return env


def ints(env, *names):
    out = []
    for n in names:
        v = env.get(n, "")
        out.append(int(v) if re.fullmatch(r"\d+", str(v)) else None)
    return out


def analyse(repo, rnd, sub, system, bench, rdir, files):
    notes = [f"results={rdir}"]
    per_file, steps, meta, ev = [], 0, {}, {}
    for f in sorted(files):
        for k, v in log_evidence(repo.show(f)).items():
            ev.setdefault(k, v)
        t, m = parse_result(repo.show(f))
        for k, v in m.items():
            meta.setdefault(k, v)
        if len(t) > 2:
            per_file.append(statistics.median(t[2:]))
            steps += len(t) - 2
    try:
        sysj = json.loads(repo.show(f"{sub}/systems/{system}.json"))
    except Exception:
        sysj = {}
    accel = sysj.get("accelerator_model_name", "")
    gpu = gpu_of(accel)
    nodes, gpn = int(sysj.get("number_of_nodes", 0) or 0), int(sysj.get("accelerators_per_node", 0) or 0)
    gpus = nodes * gpn
    gbs = int(meta.get("global_batch_size", 0) or 0)
    ga = int(float(meta.get("gradient_accumulation_steps", 0) or 0))
    plat = str(meta.get("submission_platform", ""))
    if accel and not re.search(
        r"\((GB200|GB300|B200-SXM-180GB|B300-SXM-270GB)\)|^NVIDIA H[12]00-SXM5|^AMD Instinct", accel
    ):
        notes.append(f"accelerator_model_name='{accel}'")
    pg = gpu_of(plat)
    if pg and pg != gpu:
        notes.append(f"log submission_platform='{plat}' disagrees with systems JSON ({accel})")
    m = re.match(r"(\d+)x", plat)
    if m and int(m.group(1)) != nodes:
        notes.append(f"log submission_platform='{plat}' node count != systems JSON nodes {nodes}")

    # ---- config selection ----
    bench_root = f"{sub}/benchmarks/{bench}"

    def list_cfgs(root):
        return [
            f
            for f in repo.files
            if f.startswith(root + "/")
            and re.search(r"/config_[^/]*\.sh$", f)
            and "common" not in os.path.basename(f)
            and "mounts" not in os.path.basename(f)
        ]

    cfgs = list_cfgs(bench_root)
    alt = bench_root.replace("/llama31_", "/llama3_")
    if not cfgs and list_cfgs(alt):
        bench_root, cfgs = alt, list_cfgs(alt)
        notes.append(f"configs taken from misnamed dir {alt}/")
    envs = {c: effective(repo, c, bench_root) for c in cfgs}

    def fits(e, check_ga=True):
        n, g, tp, pp, cp, mbs, mini = ints(
            e,
            "DGXNNODES",
            "DGXNGPU",
            "TENSOR_MODEL_PARALLEL",
            "PIPELINE_MODEL_PARALLEL",
            "CONTEXT_PARALLEL",
            "MICRO_BATCH_SIZE",
            "MINIBS",
        )
        cp = cp or 1
        if None in (n, g, tp, pp, mbs) or n * g != gpus or gpus % (tp * pp * cp):
            return False
        dp = gpus // (tp * pp * cp)
        gbs_cfg = mini * dp if mini else int(e.get("GBS", 0) or 0)
        return gbs_cfg == gbs and (not check_ga or dp * mbs * ga == gbs)

    match = [c for c, e in envs.items() if fits(e)]
    how = "GPUs/GBS/GA match"
    if not match:
        match = [c for c, e in envs.items() if fits(e, False)]
        if match:
            notes.append(f"no config reproduces log gradient_accumulation_steps={ga}; matched on GPUs/GBS only")
    dgx = ev.get("DGXSYSTEM")
    if dgx:
        by_name = [c for c in (match or cfgs) if os.path.basename(c) == f"config_{dgx}.sh"]
        if by_name:
            match, how = by_name, f"log DGXSYSTEM={dgx}"
        else:
            notes.append(f"log DGXSYSTEM={dgx} has no config file of that name")
    readmes = [f for f in repo.files if f.startswith(bench_root + "/") and os.path.basename(f) == f"README-{system}.md"]
    named = {n for r in readmes for n in re.findall(r"config_[\w.+-]+?\.sh", repo.show(r))}
    if len(match) > 1 and any(os.path.basename(c) in named for c in match):
        match = [c for c in match if os.path.basename(c) in named]
        how += f" + named in {readmes[0]}"
    exact = [c for c in match if ints(envs[c], "DGXNNODES", "DGXNGPU") == [nodes, gpn]]
    if len(match) > 1 and exact and len(exact) < len(match):
        match, how = exact, how + " + nodes x GPUs-per-node"
    bare = re.sub(r"^\d+x", "", system)
    for sel, why in (
        (lambda c: bare in os.path.basename(c), "config file named after the system"),
        (lambda c: system.startswith(os.path.basename(os.path.dirname(c))), "config dir named after the system"),
    ):
        if len(match) > 1 and 0 < sum(map(sel, match)) < len(match):
            match, how = [c for c in match if sel(c)], how + " + " + why
    if len(match) > 1 and "fp4" in ev:
        log_fp4 = ev["fp4"] not in ("None", "False")
        same = [c for c in match if truthy(envs[c].get("FP4")) == log_fp4]
        if 0 < len(same) < len(match):
            match, how = same, how + f" + log model config fp4={ev['fp4']}"
    if len(match) > 1 and 0 < sum(gpu_of(os.path.basename(c)) == gpu for c in match) < len(match):
        match = [c for c in match if gpu_of(os.path.basename(c)) == gpu]
        how += f" + {gpu} in config name"
    if len(match) > 1:
        non_fp4 = [c for c in match if not truthy(envs[c].get("FP4"))] or match
        cfg_cell = "ambiguous: " + "|".join(os.path.basename(c) for c in match)
        cfg = sorted(non_fp4, key=len)[0]
        notes.append(f"ambiguous config ({how}): candidates {'|'.join(match)}; settings taken from {cfg}")
    elif match:
        cfg = match[0]
        cfg_cell = os.path.basename(cfg)
        notes.append(f"config={cfg} ({how})")
    else:
        cfg, cfg_cell = None, ""
        notes.append(
            "no config_*.sh in the submission matches GPUs/GBS/GA"
            if cfgs
            else f"no {bench} configs in {sub}/benchmarks"
        )
    row = dict(
        round=rnd,
        submitter=sub,
        system=system,
        benchmark=bench,
        gpu=gpu,
        gpus=gpus,
        nodes=nodes,
        gpus_per_node=gpn,
        config_file=cfg_cell,
        global_batch=gbs,
        seq_len=meta.get("max_sequence_length", ""),
        result_files=len(files),
        steps_counted=steps,
    )
    if per_file:
        row.update(
            step_time_s=f"{statistics.median(per_file):.4g}",
            step_time_min_s=f"{min(per_file):.4g}",
            step_time_max_s=f"{max(per_file):.4g}",
        )
    else:
        notes.append("no per-step train_step_time in logs (only block throughput)")
    if cfg:
        e = envs[cfg]
        if any(s.startswith("MISSING:") for s in e["_sourced"]):
            notes.append("unresolved source: " + ",".join(s for s in e["_sourced"] if s.startswith("MISSING:")))
        far = [s for s in e["_sourced"] if not s.startswith("MISSING:") and os.path.dirname(s) != os.path.dirname(cfg)]
        if far:
            notes.append("sourced file absent next to config, used: " + ",".join(far))
        tp, pp, cp, mbs, mini, n, g = ints(
            e,
            "TENSOR_MODEL_PARALLEL",
            "PIPELINE_MODEL_PARALLEL",
            "CONTEXT_PARALLEL",
            "MICRO_BATCH_SIZE",
            "MINIBS",
            "DGXNNODES",
            "DGXNGPU",
        )
        cp = cp or 1
        dp = gpus // (tp * pp * cp)
        vp = e.get("INTERLEAVED_PIPELINE", "")
        if tp * pp * cp * dp != gpus:
            notes.append(f"TPxPPxCPxDP != GPUs ({tp}x{pp}x{cp}x{dp} vs {gpus})")
        if mini and mini * dp != gbs:
            notes.append(f"MINIBS x DP = {mini * dp} != log GBS {gbs}")
        if (n, g) != (nodes, gpn):
            notes.append(f"config DGXNNODES x DGXNGPU = {n}x{g} vs systems JSON {nodes}x{gpn}")
        cg = gpu_of(os.path.basename(cfg))
        if cg and cg != gpu:
            notes.append(f"config name says {cg} but system is {gpu}")
        if truthy(e.get("FP4")):
            prec, recipe = "nvfp4", e.get("FP4_RECIPE", "nvfp4")
        elif truthy(e.get("FP8")):
            prec, recipe = "fp8", e.get("FP8_RECIPE", "")
            if not recipe:
                y = f"{os.path.dirname(cfg)}/conf/custom.yaml"
                mm = re.search(r"oc\.env:FP8_RECIPE,(\w+)", repo.show(y)) if y in repo.file_set else None
                recipe = mm.group(1) if mm else ""
                notes.append(
                    f"FP8_RECIPE unset; '{recipe}' is the conf/custom.yaml default" if mm else "FP8_RECIPE unset"
                )
        elif "FP8" in sysj.get("sw_notes", "").upper() or truthy(e.get("FP8_PARAMS")):
            prec, recipe = "fp8", ""
            notes.append("no FP8 switch in config; fp8 per systems JSON sw_notes / FP8_PARAMS")
        else:
            prec, recipe = "bf16", ""
        full, mcore = truthy(e.get("FULL_CUDA_GRAPH")), truthy(e.get("MCORE_CUDA_GRAPH"))
        rec = [
            f"{k}={e[k]}"
            for k in sorted(e)
            if k != "_sourced" and re.search(r"RECOMPUTE|ACTIVATIONS_CHECKPOINT|ACT_CKPT", k)
        ]
        row.update(
            tp=tp,
            pp=pp,
            vp=vp if re.fullmatch(r"\d+", vp) else 1,
            cp=cp,
            dp=dp,
            micro_batch=mbs,
            precision=prec,
            fp8_recipe=recipe,
            fp8_attention=yn(e.get("FP8_DPA")) if prec != "bf16" else "no",
            tp_overlap=yn(e.get("TP_COMM_OVERLAP")),
            fp8_param_gather=yn(e.get("FP8_PARAM_GATHER") or e.get("FP8_PARAMS")),
            cuda_graph="full" if full else "mcore" if mcore else "none",
            asym_pp_embed=yn(e.get("ASYM_PP_EMBED")),
            asym_pp_loss=yn(e.get("ASYM_PP_LOSS")),
            recompute=" ".join(rec) or "none",
            dist_optimizer=yn(e.get("USE_DIST_OPTIMIZER", "True")),
            # conf/custom.yaml's defaults: sequence_parallel SEQ_PARALLEL True, cross_entropy_loss_fusion
            # CROSS_ENTROPY_LOSS_FUSION True, cross_entropy_fusion_impl CE_FUSION_IMPL 'native'
            sequence_parallel=yn(e.get("SEQ_PARALLEL", "True")),
            cross_entropy=e.get("CE_FUSION_IMPL", "native")
            if truthy(e.get("CROSS_ENTROPY_LOSS_FUSION", "True"))
            else "unfused",
        )
        chk = []
        if "fp4" in ev and (ev["fp4"] not in ("None", "False")) != (prec == "nvfp4"):
            chk.append(f"fp4={ev['fp4']}")
        if "fp8" in ev and prec == "fp8" and ev["fp8"] in ("None", "False"):
            chk.append(f"fp8={ev['fp8']}")
        if "cuda_graph_scope" in ev and (ev["cuda_graph_scope"] == "full_iteration") != full:
            chk.append(f"cuda_graph_scope={ev['cuda_graph_scope']}")
        if "fp8_dot_product_attention" in ev and truthy(ev["fp8_dot_product_attention"]) != (
            row["fp8_attention"] == "yes"
        ):
            chk.append(f"fp8_dot_product_attention={ev['fp8_dot_product_attention']}")
        if chk:
            notes.append("log model-config dump disagrees with config: " + ", ".join(chk))
        if "USE_DIST_OPTIMIZER" not in e:
            notes.append("USE_DIST_OPTIMIZER unset (NeMo conf default True)")
    row["notes"] = "; ".join(notes)
    return row


def main(v50, v51):
    rows, heads, seen = [], [], {}
    for rnd, gitdir in (("v5.0", v50), ("v5.1", v51)):
        repo = Repo(gitdir)
        repo.file_set = set(repo.files)
        heads.append((rnd, repo.head))
        dirs = {}
        for f in repo.files:
            p = f.split("/")
            if len(p) == 5 and p[1] == "results" and p[3] in BENCHES and re.match(r"result_\d+\.txt$", p[4]):
                dirs.setdefault((p[0], p[2], p[3]), []).append(f)
        for (sub, system, bench), files in sorted(dirs.items()):
            row = analyse(repo, rnd, sub, system, bench, f"{sub}/results/{system}/{bench}", files)
            blobs = tuple(sorted(repo.git("ls-tree", "HEAD", *files).split()[2::4]))
            if blobs in seen:  # a round resubmitting another's logs: one measurement, counted once
                row["notes"] = f"duplicate of {seen[blobs]}: the same result files, byte for byte; " + row["notes"]
            seen.setdefault(blobs, f"{rnd} {sub}/results/{system}/{bench}")
            rows.append(row)
    out = io.StringIO()
    h = dict(heads)
    for line in HEADER.format(v50=h["v5.0"], v51=h["v5.1"]).splitlines():
        out.write("# " + line + "\n")
    w = csv.DictWriter(out, COLS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: r.get(c, "") for c in COLS})
    sys.stdout.write(out.getvalue())


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
