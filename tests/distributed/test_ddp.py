"""DistributedDataParallel over two processes, each rank's model compiled by toycompiler.

Two processes (``torch.multiprocessing`` spawn) join a ``gloo`` process group that they find through a
file in the test's temporary folder (on a machine with two GPUs also an ``nccl`` group, one GPU a rank,
with Triton kernels) and run
two training steps on their half of a batch: forward, MSE loss, backward (DDP averages the gradients
across ranks with all-reduce), SGD step. The result must equal one eager process on the whole batch:
the mean loss over the batch is the mean of the two halves' mean losses, so its gradient
is the average of the ranks' gradients, which is what DDP computes.

Where DDP's hooks and buckets sit relative to the compiled graphs. DDP registers a hook on every
parameter's gradient accumulator and groups parameters into buckets; when all gradients of a bucket
are ready, that bucket's all-reduce starts, so communication overlaps the rest of the backward pass.
toycompiler compiles the forward into one graph and AOTAutograd's backward into one graph, which
autograd runs as a single node: every parameter's gradient comes out of it at once, at its end. So
all of DDP's hooks fire after the whole compiled backward, and every bucket's all-reduce starts then:
correct, but without overlap. TorchDynamo instead splits the graph at bucket boundaries (its
DDPOptimizer) so that each bucket's gradients come out of their own backward graph; toycompiler does
not (yet). The test records, through a communication hook, the buckets a step reduced and when: each
one after the compiled backward graph ran (in eager DDP, the first bucket goes while the backward of
the first layers still runs).

Two ways to combine them are tested: ``DDP(toycompiler.compile(model))`` (compile the module inside,
DDP's own Python stays eager) and ``toycompiler.compile(DDP(model))``, which, like
``torch.compile(ddp_model)``, runs DDP's ``forward`` eagerly and compiles the wrapped module's
``forward`` under it (see ``toycompiler.api.CompiledModule``): both give the one graph of ``model``.
"""

from __future__ import annotations

import gc
import os
import time
import types
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

WORLD = 2
BATCH = 8


def make_model() -> nn.Module:
    torch.manual_seed(0)  # the same initial weights on every rank and in the eager reference
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))


def make_batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, 8, generator=g), torch.randn(BATCH, 4, generator=g)


def train_step(model: nn.Module, step_model: nn.Module, x: torch.Tensor, y: torch.Tensor,
               events: list | None = None) -> float:
    model.zero_grad(set_to_none=True)
    loss = F.mse_loss(step_model(x), y)
    if events is not None:  # note when the compiled backward graph has run, among the buckets' events
        node = _find_node(loss.grad_fn, "CompiledFunctionBackward")
        node.register_hook(lambda grad_inputs, grad_outputs: events.append("backward graph"))
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    return loss.item()


def _find_node(node, name: str):
    """The autograd node called ``name`` in the graph that ends at ``node``."""
    seen, todo = set(), [node]
    while todo:
        node = todo.pop()
        if node is not None and node not in seen:
            if node.name() == name:
                return node
            seen.add(node)
            todo += [next_node for next_node, _ in node.next_functions]
    raise AssertionError(f"no {name} node in the backward graph")


def _record_buckets(state, bucket):  # no annotations: DDP checks them, and they are strings in this file
    """A communication hook: note which bucket is reduced, then all-reduce and average it as DDP does."""
    state.append(f"bucket {bucket.index()}")
    buffer = bucket.buffer().div_(dist.get_world_size())
    return dist.all_reduce(buffer, async_op=True).get_future().then(lambda fut: fut.value()[0])


def _rank(rank: int, way: str, out_dir: str, group: str) -> None:
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    device, backend = (f"cuda:{rank}", "triton") if group == "nccl" else ("cpu", "cpp")  # NCCL: one GPU a rank
    if group == "nccl":
        torch.cuda.set_device(rank)
    dist.init_process_group(group, init_method=f"file://{os.path.join(out_dir, 'store')}", rank=rank,
                            world_size=WORLD, timeout=timedelta(seconds=60))
    try:
        _train_and_save(rank, way, out_dir, device, backend)
    finally:
        # DDP's reducer must be gone before its process group: freed after it (as the locals of a function
        # that destroyed the group), it sometimes waited forever on a gloo thread at the rank's exit
        gc.collect()
        dist.destroy_process_group()


def _train_and_save(rank: int, way: str, out_dir: str, device: str, backend: str) -> None:
    import toycompiler
    from toycompiler.testing import fallback_reasons

    model = make_model().to(device)
    x, y = (t.chunk(WORLD)[rank].to(device) for t in make_batch())
    if way == "compile_inside":
        compiled = toycompiler.compile(model, backend=backend)
        ddp = nn.parallel.DistributedDataParallel(compiled, bucket_cap_mb=0.0005)  # small: several buckets
        step_model, report_on = ddp, compiled
    else:
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0005)
        step_model = report_on = toycompiler.compile(ddp, backend=backend)
    events: list[str] = []  # "bucket 0", ... and "backward graph", in the order they happened
    ddp.register_comm_hook(events, _record_buckets)
    train_step(model, step_model, x, y)  # DDP's first step reduces all gradients in one bucket, then
    events.clear()  # rebuilds the buckets in the order the gradients came: the second step shows them
    loss = train_step(model, step_model, x, y, events)
    frames = report_on._compiled_forward.compiled_frames
    torch.save(dict(loss=loss, params={n: p.detach().cpu() for n, p in model.named_parameters()},
                    grads={n: p.grad.cpu() for n, p in model.named_parameters()}, events=events,
                    fallbacks=fallback_reasons(report_on), graphs=sum(f.graph is not None for f in frames),
                    breaks=[str(f.translation.graph_break) for f in frames if f.translation.graph_break]),
               os.path.join(out_dir, f"rank{rank}.pt"))


def run_ranks(way: str, out_dir: str, group: str = "gloo", deadline_s: float = 150.0) -> None:
    """Spawn the ranks and wait for them, at most ``deadline_s``: a rank stuck in a collective that the
    other never joins would otherwise hang the suite. Stuck ranks are killed and the test fails."""
    context = mp.spawn(_rank, args=(way, out_dir, group), nprocs=WORLD, join=False)
    start = time.monotonic()
    while not context.join(timeout=5):  # raises if a rank failed
        if time.monotonic() - start > deadline_s:
            for p in context.processes:
                p.kill()
            pytest.fail(f"{way}: the ranks did not finish in {deadline_s:.0f} s (a rank waits in a collective)")


@pytest.mark.parametrize("group", ["gloo", pytest.param("nccl", marks=pytest.mark.skipif(
    torch.cuda.device_count() < 2, reason="NCCL needs two GPUs: one a rank, Triton kernels"))])
@pytest.mark.parametrize("way", ["compile_inside", "compile_ddp"])
def test_ddp_step_with_compiled_model_matches_single_process_eager(way, group, tmp_path):
    run_ranks(way, str(tmp_path), group)
    results = [torch.load(tmp_path / f"rank{r}.pt") for r in range(WORLD)]

    model = make_model()
    x, y = make_batch()
    train_step(model, model, x, y)
    eager_loss = train_step(model, model, x, y)
    for r in results:
        assert not r["fallbacks"], f"ran eagerly: {r['fallbacks']}"
        assert (r["graphs"], r["breaks"]) == (1, []), f"{r['graphs']} graphs, breaks: {r['breaks']}"
        # The gradients went through DDP's buckets, not around them, all after the one backward graph.
        assert r["events"][0] == "backward graph" and len(r["events"]) > 2, r["events"]
        assert sorted(r["events"][1:]) == [f"bucket {i}" for i in range(len(r["events"]) - 1)], r["events"]
        tol = dict(rtol=1e-5, atol=1e-6) if group == "gloo" else dict(rtol=1e-4, atol=1e-5)  # GPU vs CPU sums
        torch.testing.assert_close(r["grads"], {n: p.grad for n, p in model.named_parameters()}, **tol)
        torch.testing.assert_close(r["params"], {n: p.detach() for n, p in model.named_parameters()}, **tol)
    # each rank's loss is its half's; their mean is the whole batch's
    assert sum(r["loss"] for r in results) / WORLD == pytest.approx(eager_loss, rel=1e-5)


def test_compiling_ddp_leaves_the_wrapped_module_unchanged(monkeypatch, tmp_path):
    """compile(DDP(model)) swaps ``model.forward`` for the compiled one during a call only, even one that raises."""
    import toycompiler

    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        model = make_model()
        ddp = nn.parallel.DistributedDataParallel(model)
        compiled = toycompiler.compile(ddp, backend="cpp")
        modules = list(ddp.modules())
        x, _ = make_batch()
        torch.testing.assert_close(compiled(x), model(x))
        assert [f.graph is not None for f in compiled._compiled_forward.compiled_frames] == [True]
        with pytest.raises(RuntimeError):
            compiled(torch.randn(2, 3))  # the first Linear wants 8 features
        assert "forward" not in vars(model) and type(model).forward is nn.Sequential.forward
        assert model.forward.__func__ is nn.Sequential.forward
        assert ddp.module is model and list(ddp.modules()) == modules
        assert compiled.state_dict().keys() == {f"_orig_mod.{k}" for k in ddp.state_dict()}

        def doubled(self, x):  # a forward set on the instance, as some libraries do: compiled, then put back
            return nn.Sequential.forward(self, x) * 2

        other = make_model()
        other.forward = own = types.MethodType(doubled, other)
        torch.testing.assert_close(toycompiler.compile(nn.parallel.DistributedDataParallel(other))(x), 2 * model(x))
        assert vars(other)["forward"] is own
    finally:
        dist.destroy_process_group()
