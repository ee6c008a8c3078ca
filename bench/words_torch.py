#!/usr/bin/env python3
"""The PyTorch twin of examples/words: the same four networks, data, batches
and optimiser, for comparing accuracy and speed with snn.

    build/examples/words/words --export DATA        (writes DATA/words.bin and
                                                     DATA/lang_lstm_seed1.safetensors)
    python3 bench/words_torch.py --data DATA --task lang --model lstm
    python3 bench/words_torch.py --data DATA --init DATA/lang_lstm_seed1.safetensors
    python3 bench/words_torch.py --data DATA --task lm --model transformer --time-steps 200
    python3 bench/words_torch.py --data DATA --onnx lang_lstm.onnx   (then: words --start lang_lstm.onnx)

It reads the encoded split that the example exports (see
examples/words/wordlists.h), builds the inputs and labels of the task as the
example does, and trains with Adam (same learning rate and epsilon) on
mini-batches in the same order: the same splitmix64 generator, seeded with
--seed, shuffles the training words before every epoch, and the last batch
of an epoch is the remainder. Layers and initialisation follow snn's:
dense layers glorot-uniform with zero biases, embeddings N(0, 1) with the
padding row 0, learned positions N(0, 0.02), the LSTM's and the attention's
PyTorch's own. With --init FILE, the network starts from the parameters of
an snn model file instead (the example's --export writes its initial ones),
so that both train the same network from the same point. Lengths: packed
sequences for the LSTM, key_padding_mask for the attention, a mean over the
valid steps for the pooling, and ignore_index=-1 in the loss.

With --onnx PATH, the trained LSTM network is written as an ONNX file
(torch.onnx.export, opset 17) that the example fine-tunes or tests with
`words --start PATH` (--epochs 0: test only). The file's graph runs the LSTM
over all T steps of the batch; snn's import reads it as `lstm 128 last`,
which takes the last valid step of each word from the lengths, as the packed
sequences do here.

Prints the test accuracy (lang: per language, confusion matrix) or the bits
per character of the test words (lm: the mean cross-entropy of every
predicted token, the characters and the end token, over ln 2), with
"final test ..." lines like the example's.

--time-steps N instead times N training steps at --batch (after 10 steps of
warm-up), with torch.set_num_threads 1 and then 2, and prints the median
step time of each and the faster:
    time threads=1 median_ms X
    time threads=2 median_ms Y
    time best median_ms Z threads K
"""

import argparse
import json
import math
import statistics
import sys
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

LANGUAGES = 9
PAD, END, FIRST_CHAR = 0, LANGUAGES + 1, LANGUAGES + 3
EVAL_BATCH = 500
MASK64 = (1 << 64) - 1


def read_words(path):
    """The export of examples/words: header lines, then int32 arrays."""
    with open(path, "rb") as f:
        blob = f.read()
    header = {}
    at = 0
    while True:
        end = blob.index(b"\n", at)
        line = blob[at:end].decode("utf-8")
        at = end + 1
        if line == "data":
            break
        key, _, value = line.partition(" ")
        header[key] = value
    if header.get("snn-words") != "1":
        sys.exit(f"{path}: not an snn-words 1 file")
    steps, vocab = int(header["steps"]), int(header["vocab"])
    data = np.frombuffer(blob, dtype="<i4", offset=at)
    out = {"languages": header["languages"].split(), "steps": steps, "vocab": vocab,
           "code_points": [int(c) for c in header["code_points"].split()]}
    for split in ("train", "test"):
        n = int(header[split])
        language, data = data[:n], data[n:]
        length, data = data[:n], data[n:]
        chars, data = data[:n * (steps - 1)].reshape(n, steps - 1), data[n * (steps - 1):]
        out[split] = (language.astype(np.int64), length.astype(np.int64), chars.astype(np.int64))
    return out


def task_data(words, split, task):
    """tokens [n][T], lengths [n], labels [n] or [n][T], as the example's
    words_task_data."""
    language, length, chars = words[split]
    n, steps = len(language), words["steps"]
    tokens = np.zeros((n, steps), dtype=np.int64)
    if task == "lang":
        tokens[:, :steps - 1] = chars
        return torch.from_numpy(tokens), torch.from_numpy(length.copy()), torch.from_numpy(language.copy())
    tokens[:, 0] = 1 + language
    tokens[:, 1:] = chars
    labels = np.full((n, steps), -1, dtype=np.int64)
    labels[:, :steps - 1] = chars
    labels[np.arange(n), length] = END
    labels[np.arange(steps)[None, :] > length[:, None]] = -1
    return torch.from_numpy(tokens), torch.from_numpy(length + 1), torch.from_numpy(labels)


def dense(inputs, outputs):
    """snn's dense: glorot-uniform weight, zero bias."""
    layer = nn.Linear(inputs, outputs)
    nn.init.xavier_uniform_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


def embedding(vocab, width):
    """embedding W pad=0: N(0, 1), the padding row zero and never updated."""
    return nn.Embedding(vocab, width, padding_idx=PAD)


class LSTMNet(nn.Module):
    """input tokens T vocab=V; embedding 32 pad=0; lstm 128 [last]; dense K"""

    def __init__(self, task, steps, vocab):
        super().__init__()
        self.task, self.steps = task, steps
        self.embedding = embedding(vocab, 32)
        self.lstm = nn.LSTM(32, 128, batch_first=True)
        self.dense = dense(128, LANGUAGES if task == "lang" else vocab)

    def forward(self, tokens, lengths):
        x = pack_padded_sequence(self.embedding(tokens), lengths, batch_first=True,
                                 enforce_sorted=False)
        out, (h, _) = self.lstm(x)
        if self.task == "lang":
            return self.dense(h[-1])
        y, _ = pad_packed_sequence(out, batch_first=True, total_length=self.steps)
        return self.dense(y)


class Block(nn.Module):
    """layernorm; attention heads=4; add; layernorm; dense 256 gelu; dense 64; add"""

    def __init__(self, width):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, 4, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.up = dense(width, 4 * width)
        self.down = dense(4 * width, width)

    def forward(self, x, padding, causal):
        h = self.norm1(x)
        x = x + self.attention(h, h, h, key_padding_mask=padding, attn_mask=causal,
                               need_weights=False)[0]
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class PositionEmbedding(nn.Module):
    """posembed: a learned vector per step, added; N(0, 0.02)."""

    def __init__(self, steps, width):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(steps, width) * 0.02)

    def forward(self, x):
        return x + self.weight


class TransformerNet(nn.Module):
    """input tokens T vocab=V; embedding 64 pad=0; posembed; two blocks;
    layernorm; seqpool mean; dense 9 (lang) or dense V (lm, causal)"""

    def __init__(self, task, steps, vocab, width=64):
        super().__init__()
        self.task = task
        self.embedding = embedding(vocab, width)
        self.positions = PositionEmbedding(steps, width)
        self.blocks = nn.ModuleList([Block(width), Block(width)])
        self.norm = nn.LayerNorm(width)
        self.dense = dense(width, LANGUAGES if task == "lang" else vocab)
        causal = torch.triu(torch.ones(steps, steps, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal", causal if task == "lm" else None, persistent=False)

    def forward(self, tokens, lengths):
        steps = tokens.shape[1]
        padding = torch.arange(steps)[None, :] >= lengths[:, None]
        x = self.positions(self.embedding(tokens))
        for block in self.blocks:
            x = block(x, padding, self.causal)
        x = self.norm(x)
        if self.task == "lang":
            valid = (~padding).unsqueeze(-1).to(x.dtype)
            x = (x * valid).sum(1) / lengths[:, None].to(x.dtype)
        return self.dense(x)


class LSTMExport(nn.Module):
    """LSTMNet over whole sequences (no packing), for torch.onnx.export: the
    same parameters; h_n of the last step for lang."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, tokens):
        out, (h, _) = self.net.lstm(self.net.embedding(tokens))
        return self.net.dense(h[-1] if self.net.task == "lang" else out)


def export_onnx(net, args, steps, path):
    if args.model != "lstm":
        raise SystemExit("--onnx: only the lstm networks are written (the transformer's "
                         "key padding mask depends on the lengths, which its graph would take as a second input)")
    net.eval()
    tokens = torch.zeros(2, steps, dtype=torch.int64)
    torch.onnx.export(LSTMExport(net), (tokens,), path, input_names=["tokens"], output_names=["logits"],
                      dynamic_axes={"tokens": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17,
                      dynamo=False)
    print(f"wrote {path}")


def make_net(model, task, steps, vocab):
    return (LSTMNet if model == "lstm" else TransformerNet)(task, steps, vocab)


def load_snn_parameters(net, path):
    """Copies the parameters of an snn model file (safetensors, written by
    words --export) into net: the file's tensors in the order of snn's flat
    vector are the net's parameters() in order, shape for shape."""
    with open(path, "rb") as f:
        blob = f.read()
    size = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + size])
    tensors = sorted((v["data_offsets"][0], name, v) for name, v in header.items()
                     if name != "__metadata__")
    params = list(net.parameters())
    if len(params) != len(tensors):
        sys.exit(f"{path}: {len(tensors)} tensors, the network has {len(params)} parameters")
    with torch.no_grad():
        for p, (_, name, v) in zip(params, tensors):
            if v["dtype"] != "F32" or list(p.shape) != v["shape"]:
                sys.exit(f"{path}: {name} is {v['dtype']} {v['shape']}, expected F32 {list(p.shape)}")
            start, end = v["data_offsets"]
            data = np.frombuffer(blob, dtype="<f4", count=(end - start) // 4, offset=8 + size + start)
            p.copy_(torch.from_numpy(data.copy()).reshape(p.shape))


def loss_of(logits, labels):
    """Cross-entropy, the mean over the labels that are not -1."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                           ignore_index=-1)


class SplitMix64:
    """The example's shuffling generator, step for step."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, bound):
        limit = MASK64 - MASK64 % bound
        while True:
            r = self.next()
            if r < limit:
                return r % bound

    def shuffle(self, order):
        for i in range(len(order) - 1, 0, -1):
            j = self.below(i + 1)
            order[i], order[j] = order[j], order[i]


def evaluate(net, task, test, languages, vocab):
    """Returns (confusion [true][predicted], accuracy) for lang, or
    (nats per language, predicted tokens per language, bits per char) for lm."""
    tokens, lengths, labels = test
    net.eval()
    confusion = np.zeros((LANGUAGES, LANGUAGES), dtype=np.int64)
    nats = np.zeros(LANGUAGES)
    counted = np.zeros(LANGUAGES, dtype=np.int64)
    with torch.no_grad():
        for start in range(0, len(tokens), EVAL_BATCH):
            rows = slice(start, start + EVAL_BATCH)
            logits = net(tokens[rows], lengths[rows])
            language = languages[rows]
            if task == "lang":
                predicted = logits.argmax(1).numpy()
                np.add.at(confusion, (language, predicted), 1)
            else:
                y = labels[rows]
                ce = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1), ignore_index=-1,
                                     reduction="none").reshape(y.shape).double()
                valid = (y >= 0)
                np.add.at(nats, language, (ce * valid).sum(1).numpy())
                np.add.at(counted, language, valid.sum(1).numpy())
    net.train()
    if task == "lang":
        return confusion, np.trace(confusion) / confusion.sum()
    return nats, counted, nats.sum() / counted.sum() / math.log(2.0)


def train_step(net, optimiser, batch):
    tokens, lengths, labels = batch
    optimiser.zero_grad()
    loss = loss_of(net(tokens, lengths), labels)
    loss.backward()
    optimiser.step()
    return loss.item()


def batches_of(train, order, batch):
    tokens, lengths, labels = train
    for start in range(0, len(order), batch):
        rows = torch.as_tensor(order[start:start + batch])
        yield tokens[rows], lengths[rows], labels[rows]


def time_steps(args, words, train):
    """Median training step time with 1 and with 2 threads."""
    best = None
    for threads in (1, 2):
        torch.set_num_threads(threads)
        torch.manual_seed(args.seed)
        net = make_net(args.model, args.task, words["steps"], words["vocab"])
        if args.init:
            load_snn_parameters(net, args.init)
        optimiser = torch.optim.Adam(net.parameters(), lr=args.lr)
        order = list(range(len(train[0])))
        SplitMix64(args.seed).shuffle(order)
        batches = list(batches_of(train, order[:(args.time_steps + 10) * args.batch], args.batch))
        times = []
        for i, batch in enumerate(batches):
            t0 = time.perf_counter()
            train_step(net, optimiser, batch)
            if i >= 10:
                times.append(time.perf_counter() - t0)
        median = 1e3 * statistics.median(times)
        print(f"time threads={threads} median_ms {median:.3f}", flush=True)
        if best is None or median < best[0]:
            best = (median, threads)
    print(f"time best median_ms {best[0]:.3f} threads {best[1]}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="directory of words.bin (words --export DIR)")
    p.add_argument("--task", choices=["lang", "lm"], default="lang")
    p.add_argument("--model", choices=["lstm", "transformer"], default="lstm")
    p.add_argument("--epochs", type=int, default=0, help="default: the example's")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--time-steps", type=int, default=0)
    p.add_argument("--onnx", help="write the trained lstm network to this ONNX file")
    p.add_argument("--init", help="start from the parameters of this snn model file "
                   "(words --export writes DATA/TASK_MODEL_seedS.safetensors)")
    args = p.parse_args()
    if args.epochs == 0:
        args.epochs = DEFAULT_EPOCHS[(args.task, args.model)]

    words = read_words(f"{args.data}/words.bin")
    train = task_data(words, "train", args.task)
    if args.time_steps:
        time_steps(args, words, train)
        return
    test = task_data(words, "test", args.task)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    net = make_net(args.model, args.task, words["steps"], words["vocab"])
    if args.init:
        load_snn_parameters(net, args.init)
    optimiser = torch.optim.Adam(net.parameters(), lr=args.lr)
    parameters = sum(p.numel() for p in net.parameters())
    print(f"torch {torch.__version__}, {args.task} {args.model}, {parameters} parameters, "
          f"{len(train[0])} training and {len(test[0])} test words, {args.epochs} epochs, "
          f"batch {args.batch}, Adam lr {args.lr:g}, seed {args.seed}, {args.threads} threads"
          + (f", parameters from {args.init}" if args.init else ""))

    rng = SplitMix64(args.seed)
    order = list(range(len(train[0])))
    test_languages = words["test"][0]
    batches = (len(order) + args.batch - 1) // args.batch
    total = 0.0
    for epoch in range(1, args.epochs + 1):
        rng.shuffle(order)
        t0 = time.perf_counter()
        epoch_loss = sum(train_step(net, optimiser, b) for b in batches_of(train, order, args.batch))
        seconds = time.perf_counter() - t0
        total += seconds
        result = evaluate(net, args.task, test, test_languages, words["vocab"])
        metric = (f"test accuracy {100 * result[1]:.2f}%" if args.task == "lang"
                  else f"test bits per character {result[2]:.4f}")
        print(f"epoch {epoch}/{args.epochs}  loss {epoch_loss / batches:.4f}  {metric}  "
              f"train {seconds:.1f} s ({batches / seconds:.1f} steps/s)", flush=True)

    names = words["languages"]
    if args.task == "lang":
        confusion = result[0]
        print(f"\n{'language':<12} {'accuracy':>8} {'correct/total':>14}")
        for c in range(LANGUAGES):
            total_c = confusion[c].sum()
            print(f"{c} {names[c]:<10} {100 * confusion[c, c] / max(total_c, 1):7.1f}% "
                  f"{confusion[c, c]:8d}/{total_c:<5d}")
        print("\nconfusion matrix (rows: true language, columns: predicted language)")
        print(" " * 12 + "".join(f"{p:6d}" for p in range(LANGUAGES)))
        for c in range(LANGUAGES):
            print(f"{c} {names[c]:<10}" + "".join(f"{v:6d}" for v in confusion[c]))
        print(f"\nfinal test accuracy {100 * result[1]:.2f}%", end="")
    else:
        nats, counted, bpc = result
        print(f"\n{'language':<12} {'bits per char':>14} {'predicted':>12}")
        for c in range(LANGUAGES):
            print(f"{c} {names[c]:<10} {nats[c] / max(counted[c], 1) / math.log(2.0):14.3f} "
                  f"{counted[c]:12d}")
        print(f"\nfinal test bits per character {bpc:.4f}", end="")
    print(f" after {args.epochs} epochs ({batches * args.epochs} steps), {total:.1f} s of "
          f"training, {batches * args.epochs / total:.1f} steps/s")
    if args.onnx:
        export_onnx(net, args, words["steps"], args.onnx)


# The example's default epochs (examples/words/words.c, default_epochs).
DEFAULT_EPOCHS = {("lang", "lstm"): 4, ("lang", "transformer"): 2,
                  ("lm", "lstm"): 3, ("lm", "transformer"): 2}

if __name__ == "__main__":
    main()
