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


def scaled_projections(factor):
    """Multiplies every attention layer's in-projection weights by factor
    (float32, as snn reads them): the scores grow by factor^2."""
    def prepare(model):
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, Attention):
                    m.in_proj_weight.copy_((m.in_proj_weight * factor).float())
    return prepare


ADAM = ("adam", {"lr": 0.01})
SGD = ("sgd", {"lr": 0.1, "momentum": 0.9})

CASES = [
    # Two heads, lengths T, 1 and between in one batch.
    dict(name="attention_heads2", spec="input seq 5x8; attention heads=2", loss="mse", optimiser=ADAM[0],
         hp=ADAM[1], batch=3, seed=7101, lengths=[5, 1, 3], mode="train", prepare=None),
    # Causal with lengths, inference mode.
    dict(name="attention_causal_lengths", spec="input seq 6x4; attention heads=2 causal", loss="mse",
         optimiser=SGD[0], hp=SGD[1], batch=4, seed=7102, lengths=[6, 2, 1, 4], mode="eval", prepare=None),
    # One head, tiny scores (nearly uniform probabilities).
    dict(name="attention_heads1_tiny", spec="input seq 4x6; attention heads=1", loss="mse", optimiser=ADAM[0],
         hp=ADAM[1], batch=2, seed=7103, lengths=[4, 1], mode="train", prepare=scaled_projections(1e-3)),
    # A head per feature, causal, every sample full length.
    dict(name="attention_heads_e_causal", spec="input seq 4x4; attention heads=4 causal", loss="mse",
         optimiser=SGD[0], hp=SGD[1], batch=2, seed=7104, lengths=None, mode="train", prepare=None),
    # Saturated softmax: projections x 30, scores x 900; causal with lengths.
    dict(name="attention_saturated", spec="input seq 5x8; attention heads=2 causal", loss="mse",
         optimiser=ADAM[0], hp=ADAM[1], batch=3, seed=7105, lengths=[5, 2, 1], mode="train",
         prepare=scaled_projections(30.0)),
    dict(name="attention_saturated_eval", spec="input seq 5x8; attention heads=4", loss="mse",
         optimiser=SGD[0], hp=SGD[1], batch=2, seed=7106, lengths=[3, 5], mode="eval",
         prepare=scaled_projections(30.0)),
]
