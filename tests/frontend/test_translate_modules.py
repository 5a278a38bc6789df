"""nn.Module calls: global modules, submodules, module containers, parameters as graph inputs."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from translate_harness import Case, X, case_id, run_case

import toycompiler

torch.manual_seed(0)
LINEAR = nn.Linear(4, 3)
SEQ = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.Tanh())


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.fc2 = nn.Linear(6, 4)
        self.scale = 0.5

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x))) * self.scale


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.norms = nn.ModuleDict({"pre": nn.LayerNorm(4), "post": nn.LayerNorm(4)})

    def forward(self, x):
        x = self.norms["pre"](x)
        for i, layer in enumerate(self.layers):
            x = x + layer(x) * (i + 1)
        return self.norms["post"](x)


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.randn(4))
        self.weight = nn.Parameter(torch.randn(4, 4))
        self.bias = nn.Parameter(torch.randn(4))

    def forward(self, x):
        return (x - self.mean) @ self.weight.T + self.bias


class TrainingSwitch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if self.training:
            return self.fc(x) * 2
        return self.fc(x)


class Helpers(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def _project(self, x, scale=1.0):
        return self.proj(x) * scale

    def forward(self, x):
        return self._project(x) + self._project(x, scale=2.0)


class MyLinear(nn.Linear):
    def forward(self, x):
        return super().forward(x).relu()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP()
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())

    def forward(self, x):
        return self.blocks(x)


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.drop = nn.Dropout(0.1)

    def forward(self, ids):
        return self.drop(self.emb(ids)).sum(1)


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.fc.register_forward_hook(lambda m, i, o: o * 2)

    def forward(self, x):
        return self.fc(x)


class IndexedSeq(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4, 4), nn.SiLU(), nn.Linear(4, 2))

    def forward(self, x):
        h = self.layers[0](x)
        h = self.layers[1](h)
        return self.layers[-1](h), len(self.layers)


class DecoratedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleDict({"a": nn.Linear(4, 4), "b": nn.Linear(4, 4)})
        self.act = "gelu"

    @torch.no_grad()
    def forward(self, x):
        for name, m in self.blocks.items():
            x = getattr(F, self.act)(m(x))
        for i in range(len(self.blocks)):
            x = x + i
        return x


class ZipLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def forward(self, x):
        outs = []
        for layer, scale in zip(self.layers, (1.0, 2.0)):
            outs.append(layer(x) * scale)
        return torch.stack(outs).sum(0)


class IterParameters(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return x * sum(p.sum() for p in self.parameters())


class DeviceOfParameters(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    def forward(self, x):
        device = next(self.parameters()).device
        names = [name for name, _ in self.named_modules()]
        return self.body(x.to(device)), names


def eval_mode(m):
    return m.eval()


def global_linear(x):
    return LINEAR(x)


def global_sequential(x):
    return SEQ(x)


def module_made_inside(x):
    act = nn.ReLU()
    soft = nn.Softmax(dim=-1)
    return soft(act(x))


def parameters_directly(x):
    return x @ LINEAR.weight.T + LINEAR.bias


def module_twice(x):
    return LINEAR(x) + LINEAR(x * 2)


CASES = [
    Case(global_linear, X),
    Case(global_sequential, X),
    Case(module_made_inside, X),
    Case(parameters_directly, X),
    Case(module_twice, X),
    Case(MLP(), X, name="submodules"),
    Case(Stack(), X, name="modulelist_moduledict"),
    Case(WithBuffer(), X, name="buffer_and_parameters"),
    Case(TrainingSwitch(), X, name="training_true"),
    Case(eval_mode(TrainingSwitch()), X, name="training_false"),
    Case(Helpers(), X, name="helper_method"),
    Case(MyLinear(4, 4), X, name="super_forward"),
    Case(eval_mode(Nested()), X, name="nested_blocks"),
    Case(eval_mode(Conv()), lambda n: (torch.randn(2, 3, n, n),), name="conv_batchnorm_eval"),
    Case(
        eval_mode(Embed()), lambda n: (torch.randint(0, 10, (n, 5)),), name="embedding_dropout_eval"
    ),
    Case(IndexedSeq(), X, name="sequential_indexing"),
    Case(Hooked(), X, breaks="hooks", name="hooks_break"),
    Case(DecoratedForward(), X, name="no_grad_decorated_forward"),
    Case(ZipLayers(), X, name="zip_modulelist"),
    Case(IterParameters(), X, name="parameters_iteration"),
    Case(DeviceOfParameters(), X, name="next_parameters_device"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_translate(case):
    run_case(case)


def test_module_guards_identity_and_training_flag():
    model = TrainingSwitch()
    compiled = toycompiler.compile(model, backend="eager")
    x = torch.randn(3, 4)
    torch.testing.assert_close(compiled(x), model(x))
    model.eval()  # the `training` guard fails: recompile, and the eval branch is taken
    torch.testing.assert_close(compiled(x), model(x))
    cache = compiled._compiled_forward.cache
    assert len(cache.entries) == 2
    assert "training" in cache.failures[-1].expr


def test_parameter_sources_name_the_module_path():
    report = toycompiler.explain(MLP(), backend="eager")(torch.randn(2, 4))
    exprs = [g.expr for g in report.guards]
    # dict lookups, as Dynamo's sources: ``self.fc1`` would run Module.__getattr__ on every call
    assert any("self._modules['fc1']._parameters['weight']" in e for e in exprs)
    assert any(g.kind == "ID_MATCH" and g.expr.startswith("self._modules['fc1'] is") for g in report.guards)


def test_batchnorm_training_updates_buffers_like_eager():
    import copy

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    twin = copy.deepcopy(model)
    compiled = toycompiler.compile(twin, backend="eager")
    for _ in range(3):
        x = torch.randn(8, 4)
        torch.testing.assert_close(compiled(x), model(x))
    for name, buf in model.named_buffers():
        torch.testing.assert_close(dict(twin.named_buffers())[name], buf)
    assert len(compiled._compiled_forward.cache.entries) == 1
