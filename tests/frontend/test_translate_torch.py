"""torch functions, tensor methods and operators, indexing, shapes, and in-place changes."""

import operator

import pytest
import torch
import torch.nn.functional as F
from translate_harness import XY, Case, X, case_id, run_case


def X3(n):
    return (torch.randn(n, 4, 6),)


# -- torch functions and methods ------------------------------------------------------


def pointwise_chain(x):
    return torch.exp(torch.sin(x) * torch.cos(x)).tanh()


def softmax_dim(x):
    return F.softmax(x, dim=-1) + x.log_softmax(1)


def matmul_op(x, y):
    return x @ y.T + torch.matmul(x, y.transpose(0, 1))


def view_reshape(x):
    n, c = x.shape
    return x.view(-1).reshape(c, n), x.reshape(n * c // 2, 2)


def permute_transpose(x):
    return x.permute(2, 0, 1).contiguous(), x.transpose(1, 2).mT, x.flatten(1)


def cat_stack(x, y):
    return torch.cat([x, y], dim=1), torch.stack((x, y)), torch.hstack([x, y])


def chunk_split(x):
    a, b = x.chunk(2, dim=1)
    c, d = torch.split(x, [1, 3], dim=1)
    return a * b, c.sum() + d.sum()


def basic_indexing(x):
    return x[0], x[:, 1], x[..., None], x[None], x[1:-1:2], x[-1, 2:]


def tensor_index(x):
    idx = torch.tensor([0, 2])
    return x[:, idx], x.index_select(1, idx)


def list_index(x):
    return x[:, [0, 3]]


def compare_where(x, y):
    mask = x > y
    return torch.where(mask, x, y), (x >= 0) & (y < 0), mask.float()


def factories(x):
    n, c = x.shape
    return torch.zeros(x.shape) + torch.ones_like(x) + torch.arange(c) + torch.full((n, c), 2.0)


def dtype_conversion(x):
    return x.to(torch.float64) * 2, x.float().half().float(), x.long()


def shape_attributes(x):
    return x * (x.shape[0] * x.shape[1] + x.ndim + x.numel() + x.size(1) + x.dim() + x.stride(0))


def size_arithmetic(x):
    shape = x.shape[:-1] + (2, 2)
    return x.reshape(shape), x.reshape(*x.shape[:1], -1, 2)


def new_tensors(x):
    return (
        x.new_zeros(x.shape[1]) + x,
        torch.empty_like(x).fill_(1.0),
        x.new_ones((2,), device=x.device),
    )


def reductions(x):
    return x.sum(0), x.mean(dim=1), x.amax(-1), x.argmax(1), x.std(0), x.norm()


def activation_functions(x):
    return x.clamp(min=-0.5, max=0.5) + F.gelu(x) + F.silu(x) + torch.sigmoid(x)


def layer_norm_fn(x):
    return F.layer_norm(x, x.shape[-1:])


def einsum_fn(x, y):
    return torch.einsum("ij,kj->ik", x, y)


def dtype_branch(x):
    if x.dtype == torch.float32 and not x.is_cuda:
        return x * 2
    return x


def unary_ops(x):
    m = x > 0
    return -x, +x, ~m, abs(x), operator.neg(x)


def scalar_ops(x):
    return x**2, x // 0.5, x % 0.3, 2**x, 1 / (x.abs() + 1), 3 - x


def return_size(x):
    return x.shape, x.size(), x.shape[1:]


def len_of_tensor(x):
    return x * len(x)


def iterate_tensor(x):
    rows = []
    for row in x:
        rows.append(row.sum())
    return torch.stack(rows)


def masked_fill_fn(x):
    return x.masked_fill(x < 0, 0.0)


def expand_broadcast(x):
    col = x[:, :1]
    return col.expand(-1, 4) + x, torch.broadcast_to(x[0], x.shape)


def isinstance_tensor(x):
    if isinstance(x, torch.Tensor) and torch.is_tensor(x):
        return x + 1
    return x


def tensor_properties(x):
    return x.sum(1).unsqueeze(-1).squeeze(1), x.T.T, x.t().contiguous()


def gather_scatter(x):
    idx = torch.zeros(x.shape[0], 1, dtype=torch.long)
    return x.gather(1, idx), x.cumsum(1), torch.topk(x, 2, dim=1).values


def linear_fn(x, y):
    w = y.T @ y
    return F.linear(x, w), F.normalize(x, dim=-1)


def dropout_eval(x):
    return F.dropout(x, p=0.5, training=False)


# -- in-place changes ---------------------------------------------------------


def iadd_input(x):
    x += 1
    return x


def add_method_input(x, y):
    x.add_(y)
    return x * 2


def chained_inplace(x):
    x.mul_(2).add_(1)
    return x


def setitem_input(x):
    x[0] = 5.0
    return x.sum()


def setitem_slice(x):
    x[:, 1:] = 0.0
    return x


def local_buffer(x):
    buf = torch.zeros(3, x.shape[1])
    buf[1] = x.sum(0)
    buf[2, :2] = 1.0
    return buf


def zero_input(x):
    x.zero_()
    return x


def clone_then_inplace(x):
    y = x.clone()
    y += 1
    y.mul_(3)
    return y


def inplace_through_view(x):
    x[0].add_(1)
    return x


def inplace_then_read(x):
    x.mul_(2)
    return x + 1


def inplace_no_return(x):
    x.add_(1)


def clamp_inplace(x):
    x.clamp_(0, 1)
    return x


def alias_inplace(x):
    a = x
    a += 1
    return x


def inplace_in_list(x, y):
    for t in [x, y]:
        t.mul_(2)
    return x + y


def index_iadd(x):
    x[1] += 1
    return x


def relu_inplace(x):
    F.relu(x, inplace=True)
    x.sigmoid_()
    return x


CASES = [
    Case(pointwise_chain, X),
    Case(softmax_dim, X),
    Case(matmul_op, XY),
    Case(view_reshape, X),
    Case(permute_transpose, X3),
    Case(cat_stack, XY),
    Case(chunk_split, X),
    Case(basic_indexing, X),
    Case(tensor_index, lambda n: (torch.randn(4, n),)),
    Case(list_index, X),
    Case(compare_where, XY),
    Case(factories, X),
    Case(dtype_conversion, X),
    Case(shape_attributes, X),
    Case(size_arithmetic, X),
    Case(new_tensors, X),
    Case(reductions, X),
    Case(activation_functions, X),
    Case(layer_norm_fn, X),
    Case(einsum_fn, XY),
    Case(dtype_branch, X),
    Case(unary_ops, X),
    Case(scalar_ops, X),
    Case(return_size, X, graphs=0),  # no tensor op: an empty graph is not compiled
    Case(len_of_tensor, X),
    Case(iterate_tensor, X),
    Case(masked_fill_fn, X),
    Case(expand_broadcast, X),
    Case(isinstance_tensor, X),
    Case(tensor_properties, X),
    Case(gather_scatter, X),
    Case(linear_fn, XY),
    Case(dropout_eval, X),
    Case(iadd_input, X),
    Case(add_method_input, XY),
    Case(chained_inplace, X),
    Case(setitem_input, X),
    Case(setitem_slice, X),
    Case(local_buffer, X),
    Case(zero_input, X),
    Case(clone_then_inplace, X),
    Case(inplace_through_view, X),
    Case(inplace_then_read, X),
    Case(inplace_no_return, X),
    Case(clamp_inplace, X),
    Case(alias_inplace, X),
    Case(inplace_in_list, XY),
    Case(index_iadd, X),
    Case(relu_inplace, X),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_translate(case):
    run_case(case)
