"""The PyTorch twin of snn's attention op for generate_seq.py.

attention heads=H [causal] is torch.nn.MultiheadAttention(E, H,
batch_first=True) on (x, x, x) with key_padding_mask = steps at or past each
sample's length and, when causal, attn_mask = the strict upper triangle;
need_weights=False, no dropout. Its parameters (in_proj_weight,
in_proj_bias, out_proj.weight, out_proj.bias) are the module's own, so the
twin's state_dict keys are snn's tensor names.
"""
import torch
from torch import nn


class Attention(nn.MultiheadAttention):
    def __init__(self, features, heads, causal):
        super().__init__(features, heads, batch_first=True)
        self.causal = causal

    def forward(self, x, lengths):
        steps = x.shape[1]
        padding = torch.arange(steps)[None, :] >= lengths[:, None]
        mask = torch.triu(torch.ones(steps, steps, dtype=torch.bool), 1) if self.causal else None
        y, _ = super().forward(x, x, x, key_padding_mask=padding, attn_mask=mask, need_weights=False)
        return y


def build_attention(words, shape, ctx):
    heads, causal = None, False
    for w in words[1:]:
        if w.startswith("heads="):
            heads = int(w[len("heads="):])
        elif w == "causal":
            causal = True
        else:
            raise ValueError("attention: unknown option %r" % w)
    assert shape.kind == "seq" and heads and shape.features % heads == 0, (words, shape)
    return Attention(shape.features, heads, causal), shape


BUILDERS = {"attention": build_attention}


def scaled_inputs(factor):
    """Multiplies the inputs by factor (float32, as snn reads them): the
    scores grow by factor^2."""
    return lambda net, x: (x * factor).float()


# The loss does not depend on the key bias (a constant added to a row of
# scores), so its gradient is 0 up to rounding, which Adam's first steps
# divide by its own size: the Adam cases take epsilon well above that noise.
ADAM = ("adam", {"lr": 0.01, "epsilon": 1e-3})
SGD = ("sgd", {"lr": 0.1, "momentum": 0.9})

CASES = [
    # Two heads, lengths T, 1 and between in one batch.
    dict(name="attention_heads2", spec="input seq 5x8; attention heads=2", loss="xent", optimiser=ADAM[0],
         hp=ADAM[1], batch=3, seed=7101, lengths=[5, 1, 3], mode="train"),
    # Causal with lengths, inference mode.
    dict(name="attention_causal_lengths", spec="input seq 6x4; attention heads=2 causal", loss="xent",
         optimiser=SGD[0], hp=SGD[1], batch=4, seed=7102, lengths=[6, 2, 1, 4], mode="eval"),
    # One head, tiny inputs (nearly uniform probabilities).
    dict(name="attention_heads1_tiny", spec="input seq 4x6; attention heads=1", loss="xent", optimiser=ADAM[0],
         hp=ADAM[1], batch=2, seed=7103, lengths=[4, 1], mode="train", prepare=scaled_inputs(1e-3)),
    # A head per feature, causal, every sample full length.
    dict(name="attention_heads_e_causal", spec="input seq 4x4; attention heads=4 causal", loss="mse",
         optimiser=SGD[0], hp=SGD[1], batch=2, seed=7104, lengths=None, mode="train"),
    # Saturated softmax: inputs x 30, scores x 900; causal with lengths. Its
    # weight gradients reach 23 and cancel down to 0.01 (sums over scores
    # whose float32 rounding moves the probabilities, see below): such an
    # element holds 1e-6 of the largest.
    dict(name="attention_saturated", spec="input seq 5x8; attention heads=2 causal", loss="xent",
         optimiser=ADAM[0], hp=ADAM[1], batch=3, seed=7105, lengths=[5, 2, 1], mode="train",
         prepare=scaled_inputs(30.0), cancels={"gradients": 1e-6}),
    # The same in inference mode, one sample of each length. (Where two
    # scores of a row nearly tie, a float32 score of size S is off by about
    # S 2^-24, which moves the probabilities by as much: such rows differ
    # from float64 by about the golden tolerance, in PyTorch's float32 as in
    # snn.)
    dict(name="attention_saturated_eval", spec="input seq 5x8; attention heads=2 causal", loss="xent",
         optimiser="sgd", hp={"lr": 0.01}, batch=5, seed=7106, lengths=[1, 2, 3, 4, 5], mode="eval",
         prepare=scaled_inputs(30.0)),
    # A pre-norm block: layernorm, causal attention, the residual, a dense
    # layer on every step, the cross-entropy of the valid steps.
    dict(name="attention_block_xent",
         spec="input seq 6x8; dense 8 name=h; layernorm; attention heads=2 causal; add h; dense 5", loss="xent",
         optimiser=ADAM[0], hp=ADAM[1], batch=3, seed=7107, lengths=[6, 1, 4], mode="train"),
]
