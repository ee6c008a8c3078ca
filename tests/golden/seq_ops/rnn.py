"""PyTorch twins of snn's recurrent layers for generate_seq.py:
'lstm H [bidirectional] [last] [nobias]' and 'gru ...' are torch.nn.LSTM /
torch.nn.GRU (batch_first, one layer, zero initial state) run on
pack_padded_sequence(x, lengths, enforce_sorted=False), unpacked with zero
padding to T steps, or with 'last' their h_n, forward then reverse
features. The module is the torch RNN itself, so its state_dict holds
weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0 (and _reverse) as snn's
files name them, and its parameters() are in snn's flat order."""
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def recurrent_class(base):
    class Recurrent(base):
        def __init__(self, features, hidden, bidirectional, last, bias):
            super().__init__(features, hidden, batch_first=True, bidirectional=bidirectional, bias=bias)
            self.last = last

        def forward(self, x, lengths):
            steps = x.shape[1]
            packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            out, state = super().forward(packed)
            if self.last:
                h_n = state[0] if isinstance(state, tuple) else state  # [directions][n][H]
                return torch.cat(list(h_n), dim=1)
            out, _ = pad_packed_sequence(out, batch_first=True, padding_value=0.0, total_length=steps)
            return out

    Recurrent.__name__ = base.__name__
    return Recurrent


LSTM = recurrent_class(nn.LSTM)
GRU = recurrent_class(nn.GRU)


def builder(cls):
    def build(words, shape, ctx):
        hidden = int(words[1])
        options = set(words[2:])
        bidirectional, last = "bidirectional" in options, "last" in options
        module = cls(shape.features, hidden, bidirectional, last, "nobias" not in options)
        out_features = hidden * (2 if bidirectional else 1)
        out_shape = type(shape)("vector", out_features, 1) if last else type(shape)("seq", out_features, shape.steps)
        return module, out_shape
    return build


BUILDERS = {"lstm": builder(LSTM), "gru": builder(GRU)}


def saturate(factor):
    """Multiplies the inputs and every recurrent layer's weights and biases
    by factor: pre-activations of tens, gates at 0 and 1, tanh at +-1."""
    def prepare(net, x):
        for layer in net.layers:
            if isinstance(layer, (nn.LSTM, nn.GRU)):
                for p in layer.parameters():
                    p.mul_(factor)
        return x * factor
    return prepare


ADAM = dict(optimiser="adam", hp={"lr": 0.01})
SGD = dict(optimiser="sgd", hp={"lr": 0.1})

CASES = []
for op in ("lstm", "gru"):
    CASES += [
        # 40 steps: gradients through a long chain of cells.
        dict(name=op + "_long_t40", spec="input seq 40x3; %s 5" % op, loss="mse", batch=3, seed=11,
             lengths=None, mode="train", prepare=None, **SGD),
        # Pre-activations of tens: gates at 0 and 1, tanh at +-1.
        dict(name=op + "_saturated", spec="input seq 6x4; %s 5 last; dense 3" % op, loss="mse", batch=4,
             seed=12, lengths=[6, 2, 6, 5], mode="train", prepare=saturate(4.0), **ADAM),
        # Lengths 1 and T in one batch, both directions.
        dict(name=op + "_lengths_1_and_t", spec="input seq 7x3; %s 4 bidirectional" % op, loss="xent",
             batch=4, seed=13, lengths=[7, 1, 4, 7], mode="train", prepare=None, **ADAM),
        # The final states of both directions under a classifier.
        dict(name=op + "_bidirectional_last_xent", spec="input seq 6x3; %s 4 bidirectional last; dense 3" % op,
             loss="xent", batch=3, seed=14, lengths=[6, 1, 3], mode="train", prepare=None, **ADAM),
        dict(name=op + "_bidirectional_eval", spec="input seq 5x3; %s 3 bidirectional" % op, loss="xent",
             batch=2, seed=15, lengths=[5, 2], mode="eval", prepare=None, **SGD),
        # Stacked, no biases: the input gradient of the second layer.
        dict(name=op + "_stacked_nobias", spec="input seq 5x2; %s 3 nobias; %s 2 last nobias" % (op, op),
             loss="mse", batch=3, seed=16, lengths=[5, 1, 3], mode="eval", prepare=None, **ADAM),
    ]
