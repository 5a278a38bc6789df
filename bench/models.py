"""``python -m toycompiler.bench.models [--device cpu|cuda] [--quick] [--out FILE.json] [--table FILE.json]``

The model suite as a benchmark: torchvision's ResNet-18, MobileNetV3-small and a small vision
transformer, and a nanoGPT-style GPT, each in eval (``no_grad``) and in one training step (forward, loss,
backward). For each it prints what ``explain()`` shows (graphs, graph breaks, generated kernels, extern
library calls, eager fallbacks) and the time per call of eager, real ``torch.compile`` (Inductor, default
mode) and toycompiler (Triton kernels on a GPU, C++ on a CPU), measured in one run: wall time per call,
and on a GPU also GPU time (``measure.gpu_seconds``: CUDA events, L2 flushed, the host's time hidden).

The models and their inputs are defined here once; ``tests/models`` checks the same models for
correctness (outputs, gradients, graph counts against torch.compile).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import importlib.util
import json
import math
import os
import platform
import sys
import types
import warnings
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import measure


def import_torchvision():
    """``import torchvision``, also beside a CPU build of torch.

    The torchvision wheel on the package index is a CUDA build: its compiled extension (``_C.so``, only
    the detection ops such as ``nms``) cannot load beside a CPU torch, and torchvision then stops in
    ``_meta_registrations`` (registering fake kernels for ops that do not exist). When, and only when, the
    extension cannot load, the two registration modules are replaced by empty ones; the classification
    models are pure ``torch.nn`` and never call the detection ops. With a matching build this changes
    nothing.
    """
    spec = importlib.util.find_spec("torchvision")
    library = os.path.join(os.path.dirname(spec.origin), "_C.so") if spec and spec.origin else ""
    if "torchvision" not in sys.modules and os.path.exists(library):
        try:
            torch.ops.load_library(library)
        except OSError:
            for name in ("torchvision._meta_registrations", "torchvision._autograd_registrations"):
                sys.modules.setdefault(name, types.ModuleType(name))
    import torchvision

    return torchvision


# -- the GPT, in nanoGPT's shape -----------------------------------------------------------


@dataclass
class GPTConfig:
    block_size: int = 8  # longest sequence
    vocab_size: int = 32
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 16


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_head, self.n_embd = config.n_head, config.n_embd
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x):
        B, T, C = x.size()  # batch, time, channels
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # B, nh, T, hs
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(config.n_embd), CausalSelfAttention(config)
        self.ln_2, self.mlp = nn.LayerNorm(config.n_embd), MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):  # nanoGPT's scaled init of the residual projections
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)  # (t,)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)  # (b, t, n_embd)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))  # (b, t, vocab_size)
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


# -- the models and their inputs -------------------------------------------------------------
# ``size="test"``: tiny, so that Triton's CPU interpreter finishes in seconds (tests/models);
# ``size="bench"``: large enough that a GPU's time is not only launch overhead.

GPT_SIZES = {"test": GPTConfig(), "bench": GPTConfig(block_size=128, vocab_size=1024, n_layer=4, n_head=4,
                                                     n_embd=128)}
IMAGE_SIZES = {"test": (4, 32), "bench": (16, 64)}  # (batch, image side)
GPT_BATCH = {"test": 2, "bench": 8}


def make_model(name: str, size: str = "test") -> nn.Module:
    if name == "gpt":
        return GPT(GPT_SIZES[size])
    models = import_torchvision().models
    if name == "vit":
        side = IMAGE_SIZES[size][1]
        return models.vision_transformer.VisionTransformer(
            image_size=side, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=10)
    return getattr(models, name)(weights=None, num_classes=10)


MODEL_NAMES = ("gpt", "vit", "mobilenet_v3_small", "resnet18")


def inputs_for(name: str, device: str, size: str = "test") -> tuple[tuple, torch.Tensor]:
    """(model inputs, targets). ResNet-18 brings a 32x32 image down to 1x1 before its last BatchNorm, which
    in training mode then normalises each channel over the batch alone: over 2 values a difference of
    rounding is divided by a tiny standard deviation (eager float32 is itself far from float64 there), over
    4 it is well conditioned."""
    g = torch.Generator().manual_seed(1)
    if name == "gpt":
        config, batch = GPT_SIZES[size], GPT_BATCH[size]
        idx = torch.randint(0, config.vocab_size, (batch, config.block_size), generator=g)
        targets = torch.randint(0, config.vocab_size, (batch, config.block_size), generator=g)
        return (idx.to(device),), targets.to(device)
    batch, side = IMAGE_SIZES[size]
    images = torch.randn(batch, 3, side, side, generator=g)
    return (images.to(device),), torch.randint(0, 10, (batch,), generator=g).to(device)


def forward_loss(name: str, model, inputs, targets):
    """(output, loss): the GPT computes its loss inside forward (so it is compiled too); the vision
    models return logits and the loss is taken eagerly, as a training script does."""
    if name == "gpt":
        return model(*inputs, targets)
    logits = model(*inputs)
    return logits, None if targets is None else F.cross_entropy(logits, targets)


# -- the benchmark -----------------------------------------------------------------------------


def step_function(name: str, model, inputs, targets, train: bool):
    """One call to time: a forward under ``no_grad``, or forward, loss and backward."""
    if not train:
        def run():
            with torch.no_grad():
                return forward_loss(name, model, inputs, None)[0]
        return run

    def step():
        loss = forward_loss(name, model, inputs, targets)[1]
        loss.backward()
        for p in model.parameters():
            p.grad = None
    return step


def what_explain_shows(compiled) -> dict:
    """Graphs, breaks, generated kernels, extern calls and fallbacks of a compiled model, forward and
    (training) backward together, as ``explain()`` reports them."""
    from toycompiler.artifacts import Report
    from toycompiler.testing import fallback_reasons

    report = Report(tuple(compiled._compiled_forward.compiled_frames))
    backends = [b for f in report.frames for b in (f.backend, f.backend and f.backend.backward) if b]
    externs = sum(row.kind == "extern" for b in backends if b.ir for row in b.ir.buffers)
    return {"graphs": report.graph_count, "breaks": report.graph_break_count, "kernels": len(report.kernels),
            "extern_calls": externs, "fallbacks": fallback_reasons(compiled)}


def run_model(name: str, train: bool, device: str, size: str) -> dict:
    import toycompiler

    torch.manual_seed(0)
    eager = make_model(name, size).to(device).train(train)
    inputs, targets = inputs_for(name, device, size)
    target = "triton" if device == "cuda" else "cpp"
    contenders = {"eager": eager, "torch.compile": torch.compile(copy.deepcopy(eager)),
                  "toycompiler": toycompiler.compile(copy.deepcopy(eager), backend=target)}
    row = {"model": name, "mode": "train" if train else "eval", "backend": target, "wall_ms": {}, "gpu_ms": {}}
    for label, model in contenders.items():
        fn = step_function(name, model, inputs, targets, train)
        for _ in range(3):  # compile, then the first calls (kernels loaded, caches warm)
            fn()
        row["wall_ms"][label] = measure.median_seconds(fn, device) * 1e3
        if device == "cuda":
            row["gpu_ms"][label] = measure.gpu_seconds(fn) * 1e3
    row.update(what_explain_shows(contenders["toycompiler"]))
    torch._dynamo.reset()
    return row


def markdown(result: dict) -> str:
    m = result["machine"]
    gpu = m["device"] == "cuda"
    timing = m.get("gpu_timing", "do_bench, L2 flushed")  # results files before measure.GPU_TIMING: do_bench
    lines = [f"**{m['name']}**, torch {m['torch']}, triton {m['triton']}, Python {m['python']}; "
             f"measured {m['date']}; {result['size']} sizes. Times are medians in ms per call "
             f"({f'GPU time ({timing}); wall time per call in the results file' if gpu else 'wall time'}); "
             "ratios > 1 mean toycompiler is faster.", "",
             "| model | mode | backend | graphs | breaks | kernels | extern calls | fallbacks | eager | "
             "torch.compile | toycompiler | toy vs torch.compile |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["models"]:
        t = r["gpu_ms"] if gpu else r["wall_ms"]
        lines.append(f"| {r['model']} | {r['mode']} | {r['backend']} | {r['graphs']} | {r['breaks']} | "
                     f"{r['kernels']} | {r['extern_calls']} | {len(r['fallbacks'])} | {t['eager']:.3f} | "
                     f"{t['torch.compile']:.3f} | {t['toycompiler']:.3f} | "
                     f"{t['torch.compile'] / t['toycompiler']:.2f}x |")
    return "\n".join(lines)


def machine(device: str) -> dict:
    import triton

    name = torch.cuda.get_device_name() if device == "cuda" else f"{platform.machine()} CPU " \
        f"({os.cpu_count()} cores, {torch.get_num_threads()} threads)"
    return {"name": name, "device": device, "torch": torch.__version__, "triton": triton.__version__,
            "python": platform.python_version(), "date": datetime.date.today().isoformat(),
            "gpu_timing": measure.GPU_TIMING}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m toycompiler.bench.models", description=__doc__.split("\n\n")[1])
    p.add_argument("--device", choices=("cpu", "cuda"))
    p.add_argument("--quick", action="store_true", help="the tests' tiny sizes instead of the benchmark's")
    p.add_argument("--only", nargs="*", choices=MODEL_NAMES, help="run only these models")
    p.add_argument("--out", help="write the results here (JSON)")
    p.add_argument("--table", help="print the markdown table of a results file and stop")
    args = p.parse_args(argv)
    if args.table:
        with open(args.table) as f:
            return print(markdown(json.load(f)))
    warnings.filterwarnings("ignore", message="toycompiler:")  # fallbacks are counted in the table
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    size = "test" if args.quick else "bench"
    rows = []
    for name in args.only or MODEL_NAMES:
        for train in (False, True):
            rows.append(run_model(name, train, device, size))
            r = rows[-1]
            print(f"{name:20s} {r['mode']:5s} graphs {r['graphs']} breaks {r['breaks']} kernels {r['kernels']:3d} "
                  f"fallbacks {len(r['fallbacks'])}  ms eager/torch.compile/toy "
                  + " / ".join(f"{v:.3f}" for v in (r["gpu_ms"] or r["wall_ms"]).values()), flush=True)
            result = {"machine": machine(device), "size": size, "models": rows}
            if args.out:  # after every row: an interrupted run keeps what it measured
                with open(args.out, "w") as f:
                    json.dump(result, f, indent=1)
    print("\n" + markdown(result))


if __name__ == "__main__":
    main()
