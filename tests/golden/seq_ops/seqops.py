"""PyTorch twins of snn's embedding, posembed, seqpool and conv1d, and their
golden cases, for tests/golden/generate_seq.py.

Each twin is registered as layers.<i> of the model, so its parameters keep
snn's file names (layers.<i>.weight, layers.<i>.bias) and order:
  embedding D [pad=P]  nn.Embedding(V, D, padding_idx=P): weight [V][D]
  posembed             nn.Embedding(T, F) indexed by arange(T), added: weight [T][F]
  seqpool last|mean|max  over each sample's valid steps t < lengths[s]
  conv1d K OUT ...     nn.Conv1d(C, OUT, K, stride, padding, dilation, bias)
                       over [n][T][C] (channels last), the steps t >= lengths[s]
                       zeroed first; weight [OUT][C][K], bias [OUT]
"""
import torch
import torch.nn.functional as F
from torch import nn

from generate import ACTIVATIONS


def option(words, key, default):
    """The value of KEY=V among the words, or default."""
    for w in words:
        if w.startswith(key + "="):
            return int(w[len(key) + 1:])
    return default


def activation(words):
    """The activation module named among the words (identity when none)."""
    for w in words:
        if w in ACTIVATIONS and ACTIVATIONS[w] is not None:
            return ACTIVATIONS[w]()
    return nn.Identity()


def valid_steps(lengths, steps):
    """[n][T] true at the valid steps t < lengths[s]."""
    return torch.arange(steps).unsqueeze(0) < lengths.unsqueeze(1)


class Embedding(nn.Embedding):
    """y[s][t] = W[id[s][t]]; the pad row gets no gradient."""

    def forward(self, x, lengths):
        ids = x.reshape(x.shape[0], -1).long()
        return F.embedding(ids, self.weight, self.padding_idx)


class PosEmbed(nn.Embedding):
    """y[s][t] = x[s][t] + W[t]."""

    def forward(self, x, lengths):
        return x + F.embedding(torch.arange(x.shape[1]), self.weight)


class SeqPool(nn.Module):
    """The last valid step, or the mean or maximum (gradient to the first
    maximum, as torch.max) over the valid steps."""

    def __init__(self, mode):
        super().__init__()
        self.mode = mode

    def forward(self, x, lengths):
        mask = valid_steps(lengths, x.shape[1]).unsqueeze(2)
        if self.mode == "last":
            return x[torch.arange(x.shape[0]), lengths - 1]
        if self.mode == "mean":
            return (x * mask).sum(dim=1) / lengths.unsqueeze(1).to(x.dtype)
        return x.masked_fill(~mask, float("-inf")).max(dim=1).values


class Conv1d(nn.Conv1d):
    """Conv1d over [n][T][C] with the steps past each length zeroed, then
    the activation."""

    def __init__(self, channels, out, k, stride, pad, dilation, bias, act):
        super().__init__(channels, out, k, stride=stride, padding=pad, dilation=dilation, bias=bias)
        self.act = act

    def forward(self, x, lengths):
        x = x * valid_steps(lengths, x.shape[1]).unsqueeze(2).to(x.dtype)
        return self.act(super().forward(x.transpose(1, 2)).transpose(1, 2))


def build_embedding(words, shape, ctx):
    pad = option(words[2:], "pad", None)
    module = Embedding(ctx.vocab, int(words[1]), padding_idx=pad)
    return module, type(shape)("seq", int(words[1]), shape.steps)


def build_posembed(words, shape, ctx):
    return PosEmbed(shape.steps, shape.features), shape


def build_seqpool(words, shape, ctx):
    return SeqPool(words[1]), type(shape)("vector", shape.features, 1)


def build_conv1d(words, shape, ctx):
    k, out, rest = int(words[1]), int(words[2]), words[3:]
    stride, pad, dilation = option(rest, "stride", 1), option(rest, "pad", 0), option(rest, "dilation", 1)
    module = Conv1d(shape.features, out, k, stride, pad, dilation, "nobias" not in rest, activation(rest))
    steps = (shape.steps + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    return module, type(shape)("seq", out, steps)


BUILDERS = {"embedding": build_embedding, "posembed": build_posembed, "seqpool": build_seqpool,
            "conv1d": build_conv1d}


def scaled(layer, factor):
    """Multiplies the weights of node `layer` by factor: saturated
    activations and large values after it."""
    def prepare(net, x):
        net.layers[layer].weight.mul_(factor)
        return x
    return prepare


def ties(net, x):
    """Inputs rounded to -1, 0 and 1: maxima tied over several steps (the
    gradient goes to the first, as torch.max)."""
    return x.round().clamp(-1.0, 1.0)


SGD = ("sgd", {"lr": 0.1, "momentum": 0.9})
ADAM = ("adam", {"lr": 0.01})


def case(name, spec, loss, opt, batch, seed, lengths=None, mode="train", prepare=None):
    return dict(name=name, spec=spec, loss=loss, optimiser=opt[0], hp=opt[1], batch=batch, seed=seed,
                lengths=lengths, mode=mode, prepare=prepare)


CASES = [
    # embedding: a pad row, ids repeated within a batch (the scatter-add),
    # lengths 1 and T, both modes.
    case("seq_embedding_pad_mean", "input tokens 6 vocab=5; embedding 4 pad=0; seqpool mean; dense 3",
         "xent", ADAM, 4, 7101, lengths=[6, 1, 3, 6]),
    case("seq_embedding_last_eval", "input tokens 5 vocab=7; embedding 6; seqpool last; dense 2 tanh",
         "mse", SGD, 3, 7102, mode="eval", prepare=scaled(1, 8.0)),
    case("seq_embedding_flatten", "input tokens 3 vocab=4; embedding 2 pad=3; flatten; dense 2", "mse", SGD,
         5, 7103),
    # posembed before pooling and a convolution.
    case("seq_posembed_max", "input seq 5x4; posembed; seqpool max; dense 2", "mse", ADAM, 3, 7201,
         lengths=[5, 1, 2]),
    case("seq_posembed_conv_eval", "input tokens 4 vocab=6; embedding 3; posembed; conv1d 3 4 tanh pad=1; "
         "seqpool mean", "mse", SGD, 2, 7202, lengths=[1, 4], mode="eval"),
    # seqpool: each mode at lengths 1, T and between, over large values.
    case("seq_pool_last", "input seq 6x3; dense 4 tanh; seqpool last", "mse", SGD, 4, 7301,
         lengths=[1, 6, 3, 5], prepare=scaled(1, 20.0)),
    case("seq_pool_mean", "input seq 6x3; dense 4; seqpool mean; dense 2", "xent", ADAM, 3, 7302,
         lengths=[6, 1, 4], prepare=scaled(1, 50.0)),
    case("seq_pool_max", "input seq 7x2; dense 3 relu; seqpool max", "mse", SGD, 4, 7303,
         lengths=[7, 1, 2, 5], prepare=scaled(1, 30.0)),
    case("seq_pool_max_full_eval", "input seq 4x3; seqpool max; dense 2", "mse", SGD, 3, 7304, mode="eval"),
    case("seq_pool_max_ties", "input seq 6x3; seqpool max; dense 2", "mse", SGD, 4, 7305, lengths=[6, 1, 4, 5],
         prepare=ties),
    # conv1d: padding keeping T, stride and dilation, padding wider than the
    # kernel, one output step, saturated and inline gelu/silu activations.
    case("seq_conv1d_same_lengths", "input seq 8x3; conv1d 3 4 tanh pad=1; seqpool mean", "mse", SGD, 3,
         7401, lengths=[8, 1, 5], prepare=scaled(1, 10.0)),
    case("seq_conv1d_stride_dilation", "input seq 11x2; conv1d 3 3 stride=2 pad=1 dilation=2; flatten; dense 2",
         "xent", ADAM, 3, 7402),
    case("seq_conv1d_wide_pad_nobias", "input seq 3x2; conv1d 2 3 pad=3 nobias sigmoid; flatten; dense 2",
         "mse", SGD, 2, 7403),
    case("seq_conv1d_one_step", "input seq 5x4; conv1d 5 3 relu; flatten", "mse", SGD, 3, 7404),
    case("seq_conv1d_gelu_silu_eval", "input seq 6x3; conv1d 3 4 gelu pad=1; conv1d 1 3 silu; seqpool last",
         "mse", ADAM, 3, 7405, lengths=[6, 2, 1], mode="eval", prepare=scaled(1, 5.0)),
]
