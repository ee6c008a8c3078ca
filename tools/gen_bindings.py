#!/usr/bin/env python3
"""Generates the raw declarations of the language bindings from include/snn.h.

  gen_bindings.py [--header include/snn.h] [--out-dir DIR]   write the files
  gen_bindings.py --check [--header include/snn.h]           compare, write nothing

The header is the one source of every function, handle, option struct,
callback type and constant; the files of OUTPUTS below are generated from it
and committed (a binding user needs no Python). After a change of the header,
run this script and commit what it writes. --check exits 1 and names each
committed file that differs from what it would write, with the first lines
of the difference; CI runs it (tests/bindings/meson.build).

What the header cannot say (the one-line Rust docs of the existing
declarations, the C# marshalling of a parameter that is not the usual case)
is in the tables below; a new function or constant needs none of them: its
Rust doc line is the first sentence of its comment in the header.
"""

import argparse
import difflib
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abi_check  # noqa: E402  (its reading of the header must agree with this one's)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The generated files, relative to the repository root.
OUTPUTS = {
    "rust": "bindings/rust/snn-sys/src/lib.rs",
    "csharp": "bindings/csharp/src/NativeMethods.cs",
    "julia": "bindings/julia/src/libsnn.jl",
}

GENERATED = "Generated from include/snn.h by tools/gen_bindings.py: do not edit by hand."


# --- the header ---------------------------------------------------------------

class Param:
    """A C parameter or field: its type as written (base name, const, pointer
    depth) and its name."""

    def __init__(self, text):
        text = " ".join(text.replace("*", " * ").split())
        words = text.split()
        self.name = words[-1] if len(words) > 1 and words[-1] != "*" else ""
        words = words[:-1] if self.name else words
        self.depth = words.count("*")
        self.const = "const" in words
        bases = [w for w in words if w not in ("*", "const")]
        if len(bases) != 1:
            raise ValueError("cannot read the C declaration %r" % text)
        self.base = bases[0]


class Function:
    def __init__(self, name, ret, params, doc):
        self.name, self.ret, self.params, self.doc = name, ret, params, doc


class Header:
    """What the bindings mirror, in header order: `items` holds
    ("section", title), ("function", Function), ("struct", name, [Param]) and
    ("constants", [(name, value, group)]) entries, a group being the int32_t
    typedef of an enum, None for an enum without one, "#define" for a
    numeric #define (consecutive #defines form one entry)."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.raw = f.read()
        # comments and preprocessor lines blanked to spaces, so that positions
        # in `code` are positions in `raw`
        code = re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), self.raw, flags=re.S)
        defines = code
        code = re.sub(r"^[ \t]*#[^\n]*", lambda m: " " * len(m.group(0)), code, flags=re.M)
        found = []
        for m in re.finditer(r"/\* =+ \*/\s*/\*\s*(.*?)\s*\*/\s*/\* =+ \*/", self.raw):
            found.append((m.start(), ("section", m.group(1))))
        for m in re.finditer(r"\bSNN_API\s+([^;(]*?)\b(snn_\w+)\s*\(([^)]*)\)\s*;", code):
            params = m.group(3).strip()
            params = [] if params in ("", "void") else [Param(p) for p in params.split(",")]
            fn = Function(m.group(2), Param(m.group(1)), params, self.comment_before(m.start()))
            found.append((m.start(), ("function", fn)))
        self.handles, self.typedefs, self.callbacks, self.structs = [], [], {}, {}
        for m in re.finditer(r"\btypedef\s+struct\s+(snn_\w+)\s+\1\s*;", code):
            self.handles.append(m.group(1))
        for m in re.finditer(r"\btypedef\s+int32_t\s+(snn_\w+)\s*;", code):
            self.typedefs.append(m.group(1))
        for m in re.finditer(r"\btypedef\s+(\w+)\s*\(\s*\*\s*(snn_\w+)\s*\)\s*\(([^)]*)\)\s*;", code):
            self.callbacks[m.group(2)] = (Param(m.group(1)), [Param(p) for p in m.group(3).split(",")])
        for m in re.finditer(r"\btypedef\s+struct\s+(snn_\w+)\s*\{([^}]*)\}\s*\1\s*;", code):
            fields = [Param(f) for f in m.group(2).split(";") if f.strip()]
            self.structs[m.group(1)] = fields
            found.append((m.start(), ("struct", m.group(1), fields)))
        consts = []
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(SNN_\w+)[ \t]+(\(\s*-?\s*\d+\s*\)|-?\d+)[ \t]*$",
                             defines, flags=re.M):
            consts.append((m.start(), m.group(1), int(m.group(2).replace(" ", "").strip("()")), "#define"))
        for m in re.finditer(r"(?:typedef\s+int32_t\s+(\w+)\s*;\s*)?\benum\s*\{([^}]*)\}", code):
            value = -1
            offset = m.start(2)
            for item in m.group(2).split(","):
                if not item.strip():
                    offset += len(item) + 1
                    continue
                name, _, init = item.partition("=")
                value = int(init.strip(), 0) if init.strip() else value + 1
                consts.append((offset + item.index(name.strip()), name.strip(), value, m.group(1)))
                offset += len(item) + 1
        consts.sort()
        # consecutive constants of one group, with no declaration or section
        # banner between them, form one entry
        last = None
        for pos, name, value, group in consts:
            if last is not None and found[-1][1][1][-1][2] == group and \
                    not re.search(r"\bSNN_API\b|typedef|\}", code[last:pos]) and \
                    not re.search(r"/\* =+ \*/", self.raw[last:pos]):
                found[-1][1][1].append((name, value, group))
            else:
                found.append((pos, ("constants", [(name, value, group)])))
            last = pos
        found.sort(key=lambda f: f[0])
        self.items = [f[1] for f in found]
        self.functions = {i[1].name: i[1] for i in self.items if i[0] == "function"}
        self.constant_docs = {}
        for pos, name, _, _ in consts:
            line_end = self.raw.find("\n", pos)
            trailing = re.search(r"/\*\s*(.*?)\s*(\*/|$)", self.raw[pos:line_end])
            self.constant_docs[name] = trailing.group(1) if trailing else self.comment_before(pos)

    def comment_before(self, pos):
        """The comment that ends right before `pos` (only blanks between), as one line."""
        head = self.raw[:pos].rstrip()
        if not head.endswith("*/"):
            return ""
        start = head.rfind("/*")
        text = head[start + 2:-2]
        return " ".join(line.strip().lstrip("*").strip() for line in text.splitlines()).strip()


def first_sentence(text):
    m = re.match(r"(.*?[.;])(\s|$)", text)
    return (m.group(1) if m else text).rstrip(";") + ("" if (m and m.group(1).endswith(".")) else ".")


# --- tables -------------------------------------------------------------------

# The doc line of each Rust item (a struct's fields as struct.field); an item
# missing here gets the first sentence of its comment in the header.
RUST_DOCS = {
    'snn_status': 'A status code: `SNN_OK` (0) or one of the `SNN_ERR_*` codes of `snn.h`.',
    'snn_loss': 'A loss: `SNN_LOSS_MSE` or `SNN_LOSS_LOGIT_CROSSENTROPY`.',
    'snn_optimiser_kind': 'An optimiser kind: `SNN_OPTIMISER_*`.',
    'snn_hyperparameter': 'An optimiser setting: `SNN_HP_*`.',
    'snn_precision': "The precision of a forward cache's passes: `SNN_PRECISION_*`.",
    'snn_log_fn': 'The log callback: user data, a level (`SNN_LOG_*`), a UTF-8 message valid during the call.',
    'snn_model': 'A model: its layers, parameters and state.',
    'snn_forward_cache': 'The buffers of forward passes of one model.',
    'snn_backward_cache': 'The gradient buffers of one model.',
    'snn_optimiser': "An optimiser's settings, moments and step count.",
    'snn_dataset': 'A data set copied once to a device.',
    'snn_onnx_export_options': 'Options of ONNX export (`size` first: `size_of::<snn_onnx_export_options>()`).',
    'snn_onnx_export_options.size': 'The size of this struct.',
    'snn_onnx_export_options.lengths': '1: a second graph input "lengths" (int32, one per sample) for sequence models.',
    'snn_onnx_import_options': 'Options of ONNX import (`size` first).',
    'snn_onnx_import_options.size': 'The size of this struct.',
    'snn_onnx_import_options.sequence_length': 'Steps of a sequence input whose length the file leaves symbolic; 0: none.',
    'snn_onnx_import_options.batch': 'The batch at which shape subgraphs reading the batch are folded; 0: none.',
    'SNN_VERSION_MAJOR': 'The major version of the header these declarations mirror.',
    'SNN_VERSION_MINOR': 'The minor version of the header these declarations mirror.',
    'SNN_VERSION_PATCH': 'The patch version of the header these declarations mirror.',
    'SNN_VERSION_NUMBER': 'MAJOR * 1000000 + MINOR * 1000 + PATCH of the header these declarations mirror.',
    'SNN_OK': 'Success.',
    'SNN_ERR_NULL_ARGUMENT': 'A required pointer or handle was NULL.',
    'SNN_ERR_INVALID_ARGUMENT': 'A value out of its documented range.',
    'SNN_ERR_SPEC': 'The model spec does not parse.',
    'SNN_ERR_SHAPE': 'A layer does not fit its input.',
    'SNN_ERR_COUNT': 'A buffer has the wrong number of elements.',
    'SNN_ERR_BATCH': 'Batch is 0 or above the preallocated maximum.',
    'SNN_ERR_LABEL': 'A class label out of range.',
    'SNN_ERR_MODEL_MISMATCH': 'A cache or optimiser used with another model.',
    'SNN_ERR_DEVICE_MISMATCH': 'Handles or buffers on different devices.',
    'SNN_ERR_STATE': 'A call out of order (e.g. backprop before forward).',
    'SNN_ERR_OUT_OF_MEMORY': 'A host or device allocation failed.',
    'SNN_ERR_NOT_FINITE': 'NaN or Inf found (see `snn_set_check_finite`).',
    'SNN_ERR_IO': 'A file could not be read or written.',
    'SNN_ERR_FILE_FORMAT': 'A file or buffer is malformed.',
    'SNN_ERR_UNSUPPORTED': 'Not available on this device or build.',
    'SNN_ERR_GPU_PLUGIN_NOT_FOUND': '`libsnn_cuda.so` could not be loaded.',
    'SNN_ERR_GPU_DRIVER': 'The CUDA driver or runtime is missing or too old.',
    'SNN_ERR_NO_GPU': 'CUDA works but sees no device.',
    'SNN_ERR_GPU_INDEX': 'A device index out of range.',
    'SNN_ERR_CUDA': 'A CUDA, cuBLAS or cuDNN call failed.',
    'SNN_ERR_INTERNAL': 'A bug in snn: the message says what to report.',
    'SNN_ERR_TOKEN': "A token id outside the model's vocabulary.",
    'SNN_DEVICE_CPU': 'The device id of the CPU.',
    'SNN_MAX_LAYERS': 'The most layers (after the input) a spec or model file may declare.',
    'SNN_MAX_SPEC_LENGTH': 'The most characters a spec may have.',
    'SNN_LOSS_MSE': 'Mean squared error against targets.',
    'SNN_LOSS_LOGIT_CROSSENTROPY': 'Softmax cross-entropy against 0-based labels.',
    'SNN_LOSS_HUBER': "PyTorch's HuberLoss(delta) against targets; delta is the loss parameter.",
    'SNN_LOSS_SMOOTH_L1': "PyTorch's SmoothL1Loss(beta) against targets; beta is the loss parameter.",
    'SNN_LOSS_BCE_WITH_LOGITS': "PyTorch's BCEWithLogitsLoss: logits against float targets.",
    'SNN_PRECISION_FLOAT32': 'float32 everywhere (the default).',
    'SNN_PRECISION_BF16': 'Matrix products with bf16 operands and float32 accumulation.',
    'SNN_PRECISION_FP16': 'Matrix products with fp16 operands and float32 accumulation (GPUs only).',
    'SNN_OPTIMISER_SGD': 'SGD: lr 0.01, momentum 0, nesterov 0.',
    'SNN_OPTIMISER_ADAM': 'Adam: lr 0.001, beta1 0.9, beta2 0.999, eps 1e-8.',
    'SNN_OPTIMISER_ADAMW': 'AdamW: as Adam, weight decay 0.01 (decoupled).',
    'SNN_OPTIMISER_RMSPROP': 'RMSprop: lr 0.01, alpha 0.99, eps 1e-8.',
    'SNN_OPTIMISER_LION': 'Lion: lr 1e-4, beta1 0.9, beta2 0.99, weight decay 0 (decoupled).',
    'SNN_HP_LEARNING_RATE': 'Learning rate, [0, FLT_MAX].',
    'SNN_HP_MOMENTUM': 'SGD momentum, [0, 1).',
    'SNN_HP_NESTEROV': 'SGD Nesterov momentum, 0 or 1.',
    'SNN_HP_BETA1': 'Adam(W) beta1, [0, 1).',
    'SNN_HP_BETA2': 'Adam(W) beta2, [0, 1).',
    'SNN_HP_EPSILON': 'Epsilon, [FLT_MIN, FLT_MAX].',
    'SNN_HP_WEIGHT_DECAY': 'Weight decay, [0, FLT_MAX].',
    'SNN_HP_ALPHA': 'RMSprop smoothing, [0, 1).',
    'SNN_HP_DAMPENING': 'SGD dampening, [0, 1] (Nesterov needs 0).',
    'SNN_HP_MAX_GRAD_NORM': 'Clipping by the global gradient norm, [0, FLT_MAX], 0 = off (every kind).',
    'SNN_LOG_ERROR': "Log level of a failed call's message.",
    'SNN_LOG_WARNING': 'Log level of a warning.',
    'SNN_LOG_INFO': 'Log level of a note.',
    'snn_version_number': "The library's version, MAJOR * 1000000 + MINOR * 1000 + PATCH.",
    'snn_version_string': 'The library\'s version as static text, e.g. "0.1.0".',
    'snn_build_features': 'The build\'s features as static text, e.g. "cpu openblas cuda-plugin".',
    'snn_has_feature': '1 if `feature` is one word of `snn_build_features()`, else 0.',
    'snn_status_string': 'Static English text for a status code.',
    'snn_last_error': 'The message of the last failed call on this thread (empty when none failed).',
    'snn_set_num_threads': 'Bounds the CPU threads the library uses; n >= 1.',
    'snn_get_num_threads': 'The current CPU thread bound.',
    'snn_set_cpu_isa': "Caps the instruction sets of snn's CPU kernels (`SNN_CPU_ISA`'s levels); NULL returns to the environment.",
    'snn_cpu_isa': 'The instruction-set level in force, e.g. `avx2`.',
    'snn_set_log_callback': 'Installs (or with `None` removes) the process-wide log callback.',
    'snn_set_check_finite': 'With on = 1, backprop and steps fail with `SNN_ERR_NOT_FINITE` on NaN or Inf.',
    'snn_model_create': 'Parses a model spec into a new CPU model.',
    'snn_model_destroy': 'Frees a model; NULL is accepted.',
    'snn_model_describe': 'Writes the canonical spec into `buf` and its length (without the NUL) into `length`.',
    'snn_model_layer_count': 'Number of layers, the input layer included.',
    'snn_model_layer_shape': "A layer's output shape as channels, height, width.",
    'snn_model_layer_params': "Where a layer's weights and bias lie in the flat parameter vector.",
    'snn_model_input_size': 'Input features per sample.',
    'snn_model_output_size': 'Outputs per sample.',
    'snn_parameter_count': 'Number of trainable parameters.',
    'snn_model_init': 'Re-initialises every parameter from `seed`.',
    'snn_parameters': "Zero-copy view of a CPU model's flat parameter vector.",
    'snn_get_parameters': 'Copies the parameters into `dst`; count = parameter count.',
    'snn_set_parameters': 'Copies the parameters from `src`; count = parameter count.',
    'snn_state_count': 'Number of state values (running statistics).',
    'snn_get_state': 'Copies the state into `dst`; count = state count.',
    'snn_set_state': 'Copies the state from `src`; count = state count.',
    'snn_model_layer_state': "Where a layer's state lies in the state vector.",
    'snn_preallocate': "A forward cache for batches up to `max_batch`, on the model's device.",
    'snn_forward_cache_destroy': 'Frees a forward cache; NULL is accepted.',
    'snn_cache_set_batch': 'Sets the batch of the next pass, 1..=max_batch.',
    'snn_cache_set_training': 'Training (1) or inference (0) mode.',
    'snn_cache_training': 'Whether the cache runs in training mode.',
    'snn_cache_set_inference_rewrites': "Folds batchnorm (and a relu after it) into the layer before it in inference-mode float32 CPU passes (1) or not (0).",
    'snn_cache_inference_rewrites': "Whether the cache's inference rewrites are on.",
    'snn_cache_set_seed': 'Seeds the dropout generator and restarts its sequence.',
    'snn_cache_rng_state': "Reads the dropout generator's seed and the training passes run since it was set.",
    'snn_cache_set_rng_state': "Restores the dropout generator's seed and pass count.",
    'snn_cache_batch': 'The current and the maximum batch size.',
    'snn_set_inputs': 'Copies `count` = batch * features floats of input, `[batch][features]`.',
    'snn_set_inputs_gather': 'Gathers samples `indices[0..n)` of `data`; the batch becomes n.',
    'snn_forward': "Runs the model on the cache's inputs.",
    'snn_outputs': 'Zero-copy view of the outputs of the last pass (CPU caches).',
    'snn_get_outputs': 'Copies the outputs into `dst`; count = batch * outputs.',
    'snn_model_input_sequence': "The input's steps T (0 when not a sequence) and vocabulary V (0 when not token ids).",
    'snn_set_tokens': 'Copies token ids, `[batch][T]`, count = batch * T, each in `[0, V)`; resets the lengths.',
    'snn_set_tokens_gather': 'Gathers token rows `indices[0..n)` of `tokens` (sample_count rows of T); the batch becomes n.',
    'snn_set_lengths': 'The valid steps of each of the n samples of the inputs set last, each in `[1, T]`.',
    'snn_set_lengths_gather': 'Gathers lengths by index: length i is `lengths[indices[i]]`.',
    'snn_preallocate_grads': 'Gradient buffers for batches up to `max_batch`.',
    'snn_backward_cache_destroy': 'Frees a backward cache; NULL is accepted.',
    'snn_set_targets': 'Targets for `SNN_LOSS_MSE`, `[batch][outputs]`, copied.',
    'snn_set_labels': '0-based class labels for `SNN_LOSS_LOGIT_CROSSENTROPY`, copied (batch * T for a sequence output, -1 ignoring a step).',
    'snn_set_labels_gather': 'Gathers labels by index: label i is `labels[indices[i]]` (the T labels from `labels[indices[i] * T]` for a sequence output; sample_count counts samples).',
    'snn_set_input_gradient': 'With enabled = 1, backprop also computes the gradient with respect to the inputs.',
    'snn_set_loss_parameter': "Sets the parameter of a loss that has one (Huber's delta, ...) on this cache.",
    'snn_get_loss_parameter': 'The parameter of a loss on this cache (its default until set).',
    'snn_backprop': 'The loss of the last forward pass and its gradient with respect to every parameter.',
    'snn_backprop_with_output_gradient': 'Backpropagates a caller-supplied gradient with respect to the outputs.',
    'snn_gradients': 'Zero-copy view of the flat gradient (CPU caches).',
    'snn_get_gradients': 'Copies the gradient into `dst`; count = parameter count.',
    'snn_set_gradients': 'Overwrites the gradient from `src`; count = parameter count.',
    'snn_get_input_gradients': 'Copies the gradient with respect to the inputs; count = batch * features.',
    'snn_optimiser_create': "An optimiser for `model` with PyTorch's defaults.",
    'snn_optimiser_destroy': 'Frees an optimiser; NULL is accepted.',
    'snn_optimiser_set': 'Sets a hyperparameter; a failed call changes nothing.',
    'snn_optimiser_get': 'Reads a hyperparameter.',
    'snn_optimiser_step': "Updates the model's parameters from the gradient in `grads`.",
    'snn_optimiser_reset': 'Zeroes the moments and the step count.',
    'snn_optimiser_step_count': 'Steps taken since creation or reset.',
    'snn_optimiser_grad_norm': 'The gradient norm of the last step, which clipped.',
    'snn_cache_set_precision': "Sets the precision of the cache's next passes (plans again).",
    'snn_cache_precision': "The precision of the cache's passes.",
    'snn_precision_support': '`SNN_OK` when `device` can compute in `precision`; `*native` 1 when natively.',
    'snn_set_loss_scaling': "Turns dynamic loss scaling on (PyTorch's defaults) or off.",
    'snn_set_loss_scaling_state': 'Turns loss scaling on with these settings and state.',
    'snn_loss_scaling_state': 'Reads the loss scaling; every out pointer may be NULL.',
    'snn_model_save': 'Saves the model to a safetensors file, atomically.',
    'snn_model_load': 'Loads a model file onto the CPU.',
    'snn_model_save_to_buffer': 'Writes the model file into `buf`, or with `buf` NULL only its size.',
    'snn_model_load_from_buffer': 'Reads a model from the bytes of a model file.',
    'snn_model_export_onnx': 'Writes the model as an ONNX file (opset 17).',
    'snn_model_export_onnx_to_buffer': 'Writes the ONNX file into `buf`, or with `buf` NULL only its size.',
    'snn_model_import_onnx': 'Reads an ONNX file into a new CPU model.',
    'snn_model_import_onnx_from_buffer': 'Reads an ONNX model from memory into a new CPU model.',
    'snn_checkpoint_save': "Saves the model and the optimiser's kind, settings, step count and moments.",
    'snn_checkpoint_load': 'Loads a checkpoint as a CPU model and its optimiser.',
    'snn_checkpoint_save_v2': 'A checkpoint plus the loss scaling of `cache` (NULL or off: none).',
    'snn_checkpoint_load_loss_scaling': "Sets the cache's loss scaling to the checkpoint's (off when it holds none).",
    'snn_gpu_count': 'Number of usable GPUs (0 without plugin, driver or device).',
    'snn_gpu_status': '`SNN_OK` when GPU `device` can be used, else the reason.',
    'snn_to_gpu': 'Moves the model to GPU `device`.',
    'snn_to_cpu': 'Moves the model to the CPU.',
    'snn_to_best_device': 'Moves the model to GPU 0 when one can be used; writes where it is.',
    'snn_model_device': 'Where the model lives: `SNN_DEVICE_CPU` or a GPU index.',
    'snn_set_allow_tf32': 'Lets GPU caches created afterwards use TF32 math.',
    'snn_set_inputs_device': "Copies inputs that live in GPU memory on the cache's device.",
    'snn_dataset_create': 'Copies samples (and optional labels) to a device.',
    'snn_dataset_create_tokens': 'Copies token ids (optional lengths and labels, 1 or `steps` per sample) to a device.',
    'snn_dataset_destroy': 'Frees a data set; NULL is accepted.',
    'snn_set_inputs_from_dataset': 'Gathers samples of a data set into a forward cache; the batch becomes n.',
    'snn_set_labels_from_dataset': 'Gathers labels of a data set into a backward cache.',
    'snn_gradients_device': "The device pointer and length of a GPU cache's flat gradient.",
    'snn_backward_cache_synchronize': 'Waits for the work queued on the cache.',
}

# The Rust type of each #define (others are i32).
RUST_DEFINE_TYPES = {"SNN_MAX_LAYERS": "i64", "SNN_MAX_SPEC_LENGTH": "usize"}
RUST_SCALARS = {"int32_t": "i32", "int64_t": "i64", "uint64_t": "u64", "size_t": "usize",
                "double": "f64", "float": "f32", "char": "c_char", "void": "c_void"}


def wrap_doc(prefix, text, width=100):
    """`text` as comment lines starting with `prefix`, at most `width` columns."""
    lines, line = [], ""
    for word in text.split():
        if line and len(prefix) + len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = line + " " + word if line else word
    lines.append(line)
    return [(prefix + l).rstrip() for l in lines]


def rust_doc(indent, name, header_text):
    text = RUST_DOCS.get(name)
    if text is None:
        text = first_sentence(header_text) if header_text else "See `snn.h`."
        text = text.replace("[", "\\[").replace("]", "\\]")
    return wrap_doc(indent + "/// ", text)


def rust_type(p):
    if p.base == "void" and p.depth == 0:
        return "()"
    if p.base not in RUST_SCALARS and not p.base.startswith("snn_"):
        raise KeyError(p.base)
    base = RUST_SCALARS.get(p.base, p.base)  # the header's own types keep their names
    if p.depth == 0:
        return base
    return "*mut " * (p.depth - 1) + ("*const " if p.const else "*mut ") + base


def rust_signature(indent, fn):
    ret = "" if rust_type(fn.ret) == "()" else " -> " + rust_type(fn.ret)
    args = ["%s: %s" % (p.name, rust_type(p)) for p in fn.params]
    line = "%spub fn %s(%s)%s;" % (indent, fn.name, ", ".join(args), ret)
    if len(line) <= 100:
        return [line]
    return ["%spub fn %s(" % (indent, fn.name)] + ["%s    %s," % (indent, a) for a in args] + \
        ["%s)%s;" % (indent, ret)]


def generate_rust(h):
    out = ["// " + GENERATED,
           "//! Raw declarations of every function of `include/snn.h`, one to one, and its",
           "//! constants (enum members and numeric `#define`s) under their C names.",
           "//!",
           "//! `tools/abi_check.py --rust` compares these with the header and the library.",
           "//! Each item's line says what it is or does; `snn.h` documents the errors,",
           "//! ownership and lifetimes of every function. This file depends on nothing",
           "//! else of its crate.",
           "#![allow(non_camel_case_types)]",
           "",
           "use std::os::raw::{c_char, c_void};",
           ""]
    for name in h.typedefs:
        out += rust_doc("", name, "")
        out.append("pub type %s = i32;" % name)
    for name, (ret, params) in h.callbacks.items():
        ret_text = "" if rust_type(ret) == "()" else " -> " + rust_type(ret)
        out += rust_doc("", name, "")
        out.append('pub type %s = Option<unsafe extern "C" fn(%s)%s>;'
                   % (name, ", ".join(rust_type(p) for p in params), ret_text))
    out += ["", "// Opaque handles: only ever used behind pointers."]
    for name in h.handles:
        out += rust_doc("", name, "")
        out += ["#[repr(C)]", "pub struct %s {" % name, "    _opaque: [u8; 0],", "}"]
    for name, fields in h.structs.items():
        out.append("")
        out += rust_doc("", name, "")
        out += ["#[repr(C)]", "#[derive(Clone, Copy, Debug)]", "pub struct %s {" % name]
        for f in fields:
            out += rust_doc("    ", "%s.%s" % (name, f.name), "")
            out.append("    pub %s: %s," % (f.name, rust_type(f)))
        out.append("}")
    for item in h.items:
        if item[0] != "constants":
            continue
        out.append("")
        for name, value, group in item[1]:
            ty = RUST_DEFINE_TYPES.get(name, "i32") if group == "#define" else (group or "i32")
            out += rust_doc("", name, h.constant_docs[name])
            out.append("pub const %s: %s = %d;" % (name, ty, value))
    out += ["", 'extern "C" {']
    first = True
    for item in h.items:
        if item[0] == "section":
            if not first:
                out.append("")
            out.append("    // " + item[1])
            first = False
        elif item[0] == "function":
            fn = item[1]
            out += rust_doc("    ", fn.name, fn.doc)
            out += rust_signature("    ", fn)
    out.append("}")
    return "\n".join(out) + "\n"


# --- C# -----------------------------------------------------------------------

CS_SCALARS = {"int32_t": "int", "int64_t": "long", "uint64_t": "ulong", "size_t": "UIntPtr",
              "double": "double", "float": "float", "void": "void"}
# The C# names of the header's callback types and option structs.
CS_CALLBACKS = {"snn_log_fn": "LogCallback"}
CS_STRUCTS = {"snn_onnx_export_options": "OnnxExportOptionsNative",
              "snn_onnx_import_options": "OnnxImportOptionsNative"}
# Parameters whose marshalling differs from the rules of cs_param: a void*
# kept by the library, a float the library writes one of, a device pointer.
CS_PARAMS = {
    ("snn_set_log_callback", "user_data"): "IntPtr",
    ("snn_backprop", "loss_value"): "out float",
    ("snn_set_inputs_device", "device_inputs"): "IntPtr",
}


def pascal(name):
    return "".join(w.capitalize() for w in name.split("_"))


def camel(name):
    p = pascal(name)
    return p[0].lower() + p[1:]


def cs_handle(c_name):
    return pascal(c_name[len("snn_"):]) + "Handle"


def cs_param(h, fn, p):
    """The C# type and name of a parameter. Handles pass as their SafeHandle
    (IntPtr to their destroy function), a new handle as `out` of it; strings
    and byte buffers as byte[]; read buffers of numbers as pointers (pinned by
    the caller); one number the library writes as `out`."""
    name = camel(p.name)
    if (fn.name, p.name) in CS_PARAMS:
        return CS_PARAMS[(fn.name, p.name)], name
    if p.base in h.handles:
        if p.depth == 2:
            return "out " + cs_handle(p.base), p.base[len("snn_"):].split("_")[-1]
        return ("IntPtr" if fn.name.endswith("_destroy") else cs_handle(p.base)), name
    if p.base in CS_CALLBACKS:
        return CS_CALLBACKS[p.base], name
    if p.base in CS_STRUCTS:
        return "ref " + CS_STRUCTS[p.base], name
    if p.base in ("char", "void") and p.depth == 1:
        return ("[In] byte[]" if p.const else "[Out] byte[]"), name
    base = "int" if p.base in h.typedefs else CS_SCALARS[p.base]
    if p.depth == 0:
        return base, name
    if p.depth == 2:
        return "out IntPtr", name
    if p.const or base == "float":
        return base + "*", name
    return "out " + base, name


def cs_return(h, t):
    if t.depth:
        return "IntPtr"
    return "int" if t.base in h.typedefs else CS_SCALARS[t.base]


def generate_csharp(h):
    out = ["// " + GENERATED,
           "//",
           "// Raw declarations of every function of include/snn.h, one to one.",
           "// tools/abi_check.py --csharp compares these with the header (names, argument",
           "// counts and types), the SNN_ constants below with its numeric #defines, and the",
           "// public enums of Snn.cs with its enum members (names and values).",
           "//",
           "// Buffers pass as pointers, which Snn.cs takes from pinned spans (fixed), so",
           "// arrays, slices of arrays and native memory all reach the library without a",
           "// copy. Strings pass as NUL-terminated UTF-8 bytes (Library.Utf8z refuses a",
           "// string holding a NUL). Handles pass as SafeHandles (SnnHandle, Handles.cs),",
           "// so a handle cannot be released while a call that uses it runs.",
           "using System;",
           "using System.Runtime.InteropServices;",
           "",
           "namespace Snn",
           "{"]
    for name, fields in h.structs.items():
        out += ["    /// <summary>%s, field for field.</summary>" % name,
                "    [StructLayout(LayoutKind.Sequential)]",
                "    internal struct %s" % CS_STRUCTS[name],
                "    {"]
        out += ["        public %s %s;" % (CS_SCALARS[f.base], pascal(f.name)) for f in fields]
        out += ["    }", ""]
    for name in h.handles:
        destroy = name + "_destroy"
        if destroy not in h.functions:
            raise ValueError("the handle %s has no function %s" % (name, destroy))
        out += ["    internal sealed class %s : SnnHandle" % cs_handle(name),
                "    {",
                "        protected override void Destroy(IntPtr h) { NativeMethods.%s(h); }" % destroy,
                "    }",
                ""]
    for name, (ret, params) in h.callbacks.items():
        args = ", ".join("%s %s" % ("IntPtr" if p.depth else CS_SCALARS[p.base], camel(p.name)) for p in params)
        out += ["    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]",
                "    internal delegate %s %s(%s);" % (cs_return(h, ret), CS_CALLBACKS[name], args), ""]
    out += ["    internal static unsafe class NativeMethods",
            "    {",
            "        internal const string Lib = NativeLibraryName.Import;",
            "",
            "        // The numeric #defines of the header"]
    for item in h.items:
        if item[0] == "constants" and item[1][0][2] == "#define":
            out += ["        internal const int %s = %d;" % (n, v) for n, v, _ in item[1]]
    for item in h.items:
        if item[0] == "section":
            out += ["", "        // " + item[1]]
        elif item[0] == "function":
            fn = item[1]
            args = ", ".join("%s %s" % cs_param(h, fn, p) for p in fn.params)
            out += ["        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]",
                    "        internal static extern %s %s(%s);" % (cs_return(h, fn.ret), fn.name, args)]
    out += ["    }", "}"]
    return "\n".join(out) + "\n"


# --- Julia --------------------------------------------------------------------

JL_SCALARS = {"int32_t": "Int32", "int64_t": "Int64", "uint64_t": "UInt64", "size_t": "Csize_t",
              "double": "Cdouble", "float": "Cfloat", "void": "Cvoid", "char": "UInt8"}
# The Julia type of each #define (others are written as plain integers).
JL_DEFINE_TYPES = {"SNN_DEVICE_CPU": "Int32"}


def jl_struct(c_name):
    return "Snn" + pascal(c_name[len("snn_"):])


def jl_type(h, p):
    if p.base == "snn_status" and p.depth == 0:
        return "Cint"
    if p.base in h.handles:
        return "Ptr{" * (p.depth - 1) + "Ptr{Cvoid}" + "}" * (p.depth - 1)
    if p.base in h.callbacks:
        return "Ptr{Cvoid}"
    if p.base in h.structs:
        return "Ref{%s}" % jl_struct(p.base)
    if p.base == "char" and p.depth == 1 and p.const:
        return "Cstring"
    base = "Int32" if p.base in h.typedefs else JL_SCALARS[p.base]
    return "Ptr{" * p.depth + base + "}" * p.depth


def generate_julia(h):
    out = ["# " + GENERATED,
           "#",
           "# Raw declarations of every function of include/snn.h, one ccall each, and its",
           "# constants (enum members and numeric #defines) under their C names.",
           "# bindings/julia/tools/check_ccalls.js compares them with the header: names,",
           "# argument counts, argument and return types, constant values. Handles are",
           "# Ptr{Cvoid}; the library is the global `libsnn` of SNN.jl.",
           "",
           "# Constants"]
    for item in h.items:
        if item[0] != "constants":
            continue
        for name, value, group in item[1]:
            ty = JL_DEFINE_TYPES.get(name) if group == "#define" else "Int32"
            out.append("const %s = %s" % (name, "%s(%d)" % (ty, value) if ty else "%d" % value))
        out.append("")
    for item in h.items:
        if item[0] == "section":
            out += ([] if out[-1] == "" else [""]) + ["# " + item[1]]
        elif item[0] == "struct":
            out.append("struct %s" % jl_struct(item[1]))
            out += ["    %s::%s" % (f.name, jl_type(h, f)) for f in item[2]]
            out.append("end")
        elif item[0] == "function":
            fn = item[1]
            names = [p.name for p in fn.params]
            types = [jl_type(h, p) for p in fn.params]
            ret = "Cint" if fn.ret.base == "snn_status" else jl_type(h, fn.ret)
            types_text = "(%s)" % (types[0] + "," if len(types) == 1 else ", ".join(types))
            lhs = "%s(%s) =" % (fn.name, ", ".join(names))
            call = "ccall((:%s, libsnn), %s, %s%s)" % (fn.name, ret, types_text,
                                                      "".join(", " + n for n in names))
            if len(lhs) + 1 + len(call) <= 100:
                out.append(lhs + " " + call)
            elif 4 + len(call) <= 100:
                out += [lhs, "    " + call]
            else:
                out += [lhs, "    ccall((:%s, libsnn), %s," % (fn.name, ret),
                        "          %s," % types_text, "          %s)" % ", ".join(names)]
    return "\n".join(out) + "\n"


# --- main ---------------------------------------------------------------------

GENERATORS = {"rust": generate_rust, "csharp": generate_csharp, "julia": generate_julia}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--header", default=os.path.join(ROOT, "include", "snn.h"))
    ap.add_argument("--check", action="store_true",
                    help="compare the committed files with what would be generated; write nothing")
    ap.add_argument("--out-dir", default=ROOT, help="write the files under DIR (default: the repository)")
    a = ap.parse_args()
    header = Header(a.header)
    # The ABI check compares the bindings with the header as it reads it;
    # both readings must find the same functions and constants.
    constants = {n: v for item in header.items if item[0] == "constants" for n, v, _ in item[1]}
    checked = {n: v for n, (v, _) in abi_check.parse_header_constants(a.header).items()}
    if list(header.functions) != list(abi_check.parse_header(a.header)) or constants != checked:
        print("gen_bindings: %s is read differently by tools/abi_check.py (functions or constants)" % a.header)
        return 2
    stale = []
    for lang, generate in GENERATORS.items():
        path = os.path.join(a.out_dir, OUTPUTS[lang])
        text = generate(header)
        if a.check:
            try:
                with open(path, encoding="utf-8") as f:
                    old = f.read()
            except FileNotFoundError:
                old = ""
            if old != text:
                stale.append(OUTPUTS[lang])
                diff = list(difflib.unified_diff(old.splitlines(), text.splitlines(),
                                                 "committed/" + OUTPUTS[lang], "generated/" + OUTPUTS[lang],
                                                 n=1, lineterm=""))
                print("%s is out of date (run tools/gen_bindings.py); the difference begins:" % OUTPUTS[lang])
                print("\n".join(diff[:20]) + ("\n..." if len(diff) > 20 else ""))
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if a.check:
        print("gen_bindings: %s" % ("%d of %d files out of date: %s" % (len(stale), len(OUTPUTS), ", ".join(stale))
                                    if stale else "%d files up to date" % len(OUTPUTS)))
    return 1 if stale else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError, KeyError) as e:
        # 2, not 1: a header or type this script cannot read is not a stale file
        hint = "" if isinstance(e, OSError) else " (a C type of no table above: add it there)"
        print("gen_bindings: cannot generate: %s: %s%s" % (type(e).__name__, e, hint))
        sys.exit(2)
