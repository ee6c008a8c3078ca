// Generated from include/snn.h by tools/gen_bindings.py: do not edit by hand.
//! Raw declarations of every function of `include/snn.h`, one to one, and its
//! constants (enum members and numeric `#define`s) under their C names.
//!
//! `tools/abi_check.py --rust` compares these with the header and the library.
//! Each item's line says what it is or does; `snn.h` documents the errors,
//! ownership and lifetimes of every function. This file depends on nothing
//! else of its crate.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_void};

/// A status code: `SNN_OK` (0) or one of the `SNN_ERR_*` codes of `snn.h`.
pub type snn_status = i32;
/// A loss: `SNN_LOSS_MSE` or `SNN_LOSS_LOGIT_CROSSENTROPY`.
pub type snn_loss = i32;
/// An optimiser kind: `SNN_OPTIMISER_*`.
pub type snn_optimiser_kind = i32;
/// An optimiser setting: `SNN_HP_*`.
pub type snn_hyperparameter = i32;
/// The precision of a forward cache's passes: `SNN_PRECISION_*`.
pub type snn_precision = i32;
/// The log callback: user data, a level (`SNN_LOG_*`), a UTF-8 message valid during the call.
pub type snn_log_fn = Option<unsafe extern "C" fn(*mut c_void, i32, *const c_char)>;

// Opaque handles: only ever used behind pointers.
/// A model: its layers, parameters and state.
#[repr(C)]
pub struct snn_model {
    _opaque: [u8; 0],
}
/// The buffers of forward passes of one model.
#[repr(C)]
pub struct snn_forward_cache {
    _opaque: [u8; 0],
}
/// The gradient buffers of one model.
#[repr(C)]
pub struct snn_backward_cache {
    _opaque: [u8; 0],
}
/// An optimiser's settings, moments and step count.
#[repr(C)]
pub struct snn_optimiser {
    _opaque: [u8; 0],
}
/// A data set copied once to a device.
#[repr(C)]
pub struct snn_dataset {
    _opaque: [u8; 0],
}

/// Options of ONNX export (`size` first: `size_of::<snn_onnx_export_options>()`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct snn_onnx_export_options {
    /// The size of this struct.
    pub size: usize,
    /// 1: a second graph input "lengths" (int32, one per sample) for sequence models.
    pub lengths: i32,
}

/// Options of ONNX import (`size` first).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct snn_onnx_import_options {
    /// The size of this struct.
    pub size: usize,
    /// Steps of a sequence input whose length the file leaves symbolic; 0: none.
    pub sequence_length: i64,
    /// The batch at which shape subgraphs reading the batch are folded; 0: none.
    pub batch: i64,
}

/// The major version of the header these declarations mirror.
pub const SNN_VERSION_MAJOR: i32 = 0;
/// The minor version of the header these declarations mirror.
pub const SNN_VERSION_MINOR: i32 = 1;
/// The patch version of the header these declarations mirror.
pub const SNN_VERSION_PATCH: i32 = 0;
/// MAJOR * 1000000 + MINOR * 1000 + PATCH of the header these declarations mirror.
pub const SNN_VERSION_NUMBER: i32 = 1000;

/// Success.
pub const SNN_OK: snn_status = 0;
/// A required pointer or handle was NULL.
pub const SNN_ERR_NULL_ARGUMENT: snn_status = 1;
/// A value out of its documented range.
pub const SNN_ERR_INVALID_ARGUMENT: snn_status = 2;
/// The model spec does not parse.
pub const SNN_ERR_SPEC: snn_status = 3;
/// A layer does not fit its input.
pub const SNN_ERR_SHAPE: snn_status = 4;
/// A buffer has the wrong number of elements.
pub const SNN_ERR_COUNT: snn_status = 5;
/// Batch is 0 or above the preallocated maximum.
pub const SNN_ERR_BATCH: snn_status = 6;
/// A class label out of range.
pub const SNN_ERR_LABEL: snn_status = 7;
/// A cache or optimiser used with another model.
pub const SNN_ERR_MODEL_MISMATCH: snn_status = 8;
/// Handles or buffers on different devices.
pub const SNN_ERR_DEVICE_MISMATCH: snn_status = 9;
/// A call out of order (e.g. backprop before forward).
pub const SNN_ERR_STATE: snn_status = 10;
/// A host or device allocation failed.
pub const SNN_ERR_OUT_OF_MEMORY: snn_status = 11;
/// NaN or Inf found (see `snn_set_check_finite`).
pub const SNN_ERR_NOT_FINITE: snn_status = 12;
/// A file could not be read or written.
pub const SNN_ERR_IO: snn_status = 13;
/// A file or buffer is malformed.
pub const SNN_ERR_FILE_FORMAT: snn_status = 14;
/// Not available on this device or build.
pub const SNN_ERR_UNSUPPORTED: snn_status = 15;
/// `libsnn_cuda.so` could not be loaded.
pub const SNN_ERR_GPU_PLUGIN_NOT_FOUND: snn_status = 16;
/// The CUDA driver or runtime is missing or too old.
pub const SNN_ERR_GPU_DRIVER: snn_status = 17;
/// CUDA works but sees no device.
pub const SNN_ERR_NO_GPU: snn_status = 18;
/// A device index out of range.
pub const SNN_ERR_GPU_INDEX: snn_status = 19;
/// A CUDA, cuBLAS or cuDNN call failed.
pub const SNN_ERR_CUDA: snn_status = 20;
/// A bug in snn: the message says what to report.
pub const SNN_ERR_INTERNAL: snn_status = 21;
/// A token id outside the model's vocabulary.
pub const SNN_ERR_TOKEN: snn_status = 22;

/// Log level of a failed call's message.
pub const SNN_LOG_ERROR: i32 = 0;
/// Log level of a warning.
pub const SNN_LOG_WARNING: i32 = 1;
/// Log level of a note.
pub const SNN_LOG_INFO: i32 = 2;

/// The device id of the CPU.
pub const SNN_DEVICE_CPU: i32 = -1;
/// The most layers (after the input) a spec or model file may declare.
pub const SNN_MAX_LAYERS: i64 = 100000;
/// The most characters a spec may have.
pub const SNN_MAX_SPEC_LENGTH: usize = 4194304;

/// Mean squared error against targets.
pub const SNN_LOSS_MSE: snn_loss = 1;
/// Softmax cross-entropy against 0-based labels.
pub const SNN_LOSS_LOGIT_CROSSENTROPY: snn_loss = 2;
/// PyTorch's HuberLoss(delta) against targets; delta is the loss parameter.
pub const SNN_LOSS_HUBER: snn_loss = 3;
/// PyTorch's SmoothL1Loss(beta) against targets; beta is the loss parameter.
pub const SNN_LOSS_SMOOTH_L1: snn_loss = 4;
/// PyTorch's BCEWithLogitsLoss: logits against float targets.
pub const SNN_LOSS_BCE_WITH_LOGITS: snn_loss = 5;

/// SGD: lr 0.01, momentum 0, nesterov 0.
pub const SNN_OPTIMISER_SGD: snn_optimiser_kind = 1;
/// Adam: lr 0.001, beta1 0.9, beta2 0.999, eps 1e-8.
pub const SNN_OPTIMISER_ADAM: snn_optimiser_kind = 2;
/// AdamW: as Adam, weight decay 0.01 (decoupled).
pub const SNN_OPTIMISER_ADAMW: snn_optimiser_kind = 3;
/// RMSprop: lr 0.01, alpha 0.99, eps 1e-8.
pub const SNN_OPTIMISER_RMSPROP: snn_optimiser_kind = 4;
/// Lion: lr 1e-4, beta1 0.9, beta2 0.99, weight decay 0 (decoupled).
pub const SNN_OPTIMISER_LION: snn_optimiser_kind = 5;

/// Learning rate, [0, FLT_MAX].
pub const SNN_HP_LEARNING_RATE: snn_hyperparameter = 1;
/// SGD momentum, [0, 1).
pub const SNN_HP_MOMENTUM: snn_hyperparameter = 2;
/// SGD Nesterov momentum, 0 or 1.
pub const SNN_HP_NESTEROV: snn_hyperparameter = 3;
/// Adam(W) beta1, [0, 1).
pub const SNN_HP_BETA1: snn_hyperparameter = 4;
/// Adam(W) beta2, [0, 1).
pub const SNN_HP_BETA2: snn_hyperparameter = 5;
/// Epsilon, [FLT_MIN, FLT_MAX].
pub const SNN_HP_EPSILON: snn_hyperparameter = 6;
/// Weight decay, [0, FLT_MAX].
pub const SNN_HP_WEIGHT_DECAY: snn_hyperparameter = 7;
/// RMSprop smoothing, [0, 1).
pub const SNN_HP_ALPHA: snn_hyperparameter = 8;
/// SGD dampening, [0, 1] (Nesterov needs 0).
pub const SNN_HP_DAMPENING: snn_hyperparameter = 9;
/// Clipping by the global gradient norm, [0, FLT_MAX], 0 = off (every kind).
pub const SNN_HP_MAX_GRAD_NORM: snn_hyperparameter = 10;

/// float32 everywhere (the default).
pub const SNN_PRECISION_FLOAT32: snn_precision = 0;
/// Matrix products with bf16 operands and float32 accumulation.
pub const SNN_PRECISION_BF16: snn_precision = 1;
/// Matrix products with fp16 operands and float32 accumulation (GPUs only).
pub const SNN_PRECISION_FP16: snn_precision = 2;

extern "C" {
    // Version
    /// The library's version, MAJOR * 1000000 + MINOR * 1000 + PATCH.
    pub fn snn_version_number() -> i32;
    /// The library's version as static text, e.g. "0.1.0".
    pub fn snn_version_string() -> *const c_char;
    /// The build's features as static text, e.g. "cpu openblas cuda-plugin".
    pub fn snn_build_features() -> *const c_char;
    /// 1 if `feature` is one word of `snn_build_features()`, else 0.
    pub fn snn_has_feature(feature: *const c_char) -> i32;

    // Status and errors
    /// Static English text for a status code.
    pub fn snn_status_string(status: snn_status) -> *const c_char;
    /// The message of the last failed call on this thread (empty when none failed).
    pub fn snn_last_error() -> *const c_char;

    // Settings (process-wide)
    /// Bounds the CPU threads the library uses; n >= 1.
    pub fn snn_set_num_threads(n: i32) -> snn_status;
    /// The current CPU thread bound.
    pub fn snn_get_num_threads() -> i32;
    /// Caps the instruction sets of snn's CPU kernels (`SNN_CPU_ISA`'s levels); NULL returns to the
    /// environment.
    pub fn snn_set_cpu_isa(level: *const c_char) -> snn_status;
    /// The instruction-set level in force, e.g. `avx2`.
    pub fn snn_cpu_isa() -> *const c_char;
    /// Installs (or with `None` removes) the process-wide log callback.
    pub fn snn_set_log_callback(callback: snn_log_fn, user_data: *mut c_void) -> snn_status;
    /// With on = 1, backprop and steps fail with `SNN_ERR_NOT_FINITE` on NaN or Inf.
    pub fn snn_set_check_finite(on: i32) -> snn_status;

    // Models
    /// Parses a model spec into a new CPU model.
    pub fn snn_model_create(spec: *const c_char, out: *mut *mut snn_model) -> snn_status;
    /// Frees a model; NULL is accepted.
    pub fn snn_model_destroy(model: *mut snn_model);
    /// Writes the canonical spec into `buf` and its length (without the NUL) into `length`.
    pub fn snn_model_describe(
        model: *const snn_model,
        buf: *mut c_char,
        capacity: usize,
        length: *mut usize,
    ) -> snn_status;
    /// Number of layers, the input layer included.
    pub fn snn_model_layer_count(model: *const snn_model, count: *mut i64) -> snn_status;
    /// A layer's output shape as channels, height, width.
    pub fn snn_model_layer_shape(
        model: *const snn_model,
        layer: i64,
        channels: *mut i64,
        height: *mut i64,
        width: *mut i64,
    ) -> snn_status;
    /// Where a layer's weights and bias lie in the flat parameter vector.
    pub fn snn_model_layer_params(
        model: *const snn_model,
        layer: i64,
        weight_offset: *mut usize,
        weight_count: *mut usize,
        bias_offset: *mut usize,
        bias_count: *mut usize,
    ) -> snn_status;
    /// Input features per sample.
    pub fn snn_model_input_size(model: *const snn_model, features: *mut usize) -> snn_status;
    /// Outputs per sample.
    pub fn snn_model_output_size(model: *const snn_model, outputs: *mut usize) -> snn_status;
    /// Number of trainable parameters.
    pub fn snn_parameter_count(model: *const snn_model, count: *mut usize) -> snn_status;
    /// Re-initialises every parameter from `seed`.
    pub fn snn_model_init(model: *mut snn_model, seed: u64) -> snn_status;
    /// Zero-copy view of a CPU model's flat parameter vector.
    pub fn snn_parameters(
        model: *mut snn_model,
        data: *mut *mut f32,
        count: *mut usize,
    ) -> snn_status;
    /// Copies the parameters into `dst`; count = parameter count.
    pub fn snn_get_parameters(model: *const snn_model, dst: *mut f32, count: usize) -> snn_status;
    /// Copies the parameters from `src`; count = parameter count.
    pub fn snn_set_parameters(model: *mut snn_model, src: *const f32, count: usize) -> snn_status;
    /// Number of state values (running statistics).
    pub fn snn_state_count(model: *const snn_model, count: *mut usize) -> snn_status;
    /// Copies the state into `dst`; count = state count.
    pub fn snn_get_state(model: *const snn_model, dst: *mut f32, count: usize) -> snn_status;
    /// Copies the state from `src`; count = state count.
    pub fn snn_set_state(model: *mut snn_model, src: *const f32, count: usize) -> snn_status;
    /// Where a layer's state lies in the state vector.
    pub fn snn_model_layer_state(
        model: *const snn_model,
        layer: i64,
        offset: *mut usize,
        count: *mut usize,
    ) -> snn_status;

    // Forward pass
    /// A forward cache for batches up to `max_batch`, on the model's device.
    pub fn snn_preallocate(
        model: *const snn_model,
        max_batch: i64,
        out: *mut *mut snn_forward_cache,
    ) -> snn_status;
    /// Frees a forward cache; NULL is accepted.
    pub fn snn_forward_cache_destroy(cache: *mut snn_forward_cache);
    /// Sets the batch of the next pass, 1..=max_batch.
    pub fn snn_cache_set_batch(cache: *mut snn_forward_cache, batch: i64) -> snn_status;
    /// The current and the maximum batch size.
    pub fn snn_cache_batch(
        cache: *const snn_forward_cache,
        batch: *mut i64,
        max_batch: *mut i64,
    ) -> snn_status;
    /// Training (1) or inference (0) mode.
    pub fn snn_cache_set_training(cache: *mut snn_forward_cache, on: i32) -> snn_status;
    /// Whether the cache runs in training mode.
    pub fn snn_cache_training(cache: *const snn_forward_cache, on: *mut i32) -> snn_status;
    /// Folds batchnorm (and a relu after it) into the layer before it in inference-mode float32 CPU
    /// passes (1) or not (0).
    pub fn snn_cache_set_inference_rewrites(cache: *mut snn_forward_cache, on: i32) -> snn_status;
    /// Whether the cache's inference rewrites are on.
    pub fn snn_cache_inference_rewrites(
        cache: *const snn_forward_cache,
        on: *mut i32,
    ) -> snn_status;
    /// Seeds the dropout generator and restarts its sequence.
    pub fn snn_cache_set_seed(cache: *mut snn_forward_cache, seed: u64) -> snn_status;
    /// Reads the dropout generator's seed and the training passes run since it was set.
    pub fn snn_cache_rng_state(
        cache: *const snn_forward_cache,
        seed: *mut u64,
        passes: *mut u64,
    ) -> snn_status;
    /// Restores the dropout generator's seed and pass count.
    pub fn snn_cache_set_rng_state(
        cache: *mut snn_forward_cache,
        seed: u64,
        passes: u64,
    ) -> snn_status;
    /// Copies `count` = batch * features floats of input, `[batch][features]`.
    pub fn snn_set_inputs(
        cache: *mut snn_forward_cache,
        inputs: *const f32,
        count: usize,
    ) -> snn_status;
    /// Gathers samples `indices[0..n)` of `data`; the batch becomes n.
    pub fn snn_set_inputs_gather(
        cache: *mut snn_forward_cache,
        data: *const f32,
        sample_count: usize,
        indices: *const i64,
        n: usize,
    ) -> snn_status;
    /// Runs the model on the cache's inputs.
    pub fn snn_forward(cache: *mut snn_forward_cache, model: *const snn_model) -> snn_status;
    /// Zero-copy view of the outputs of the last pass (CPU caches).
    pub fn snn_outputs(
        cache: *const snn_forward_cache,
        data: *mut *const f32,
        count: *mut usize,
    ) -> snn_status;
    /// Copies the outputs into `dst`; count = batch * outputs.
    pub fn snn_get_outputs(
        cache: *const snn_forward_cache,
        dst: *mut f32,
        count: usize,
    ) -> snn_status;

    // Sequences: token ids and lengths
    /// The input's steps T (0 when not a sequence) and vocabulary V (0 when not token ids).
    pub fn snn_model_input_sequence(
        model: *const snn_model,
        steps: *mut i64,
        vocab: *mut i64,
    ) -> snn_status;
    /// Copies token ids, `[batch][T]`, count = batch * T, each in `[0, V)`; resets the lengths.
    pub fn snn_set_tokens(
        cache: *mut snn_forward_cache,
        tokens: *const i32,
        count: usize,
    ) -> snn_status;
    /// Gathers token rows `indices[0..n)` of `tokens` (sample_count rows of T); the batch becomes
    /// n.
    pub fn snn_set_tokens_gather(
        cache: *mut snn_forward_cache,
        tokens: *const i32,
        sample_count: usize,
        indices: *const i64,
        n: usize,
    ) -> snn_status;
    /// The valid steps of each of the n samples of the inputs set last, each in `[1, T]`.
    pub fn snn_set_lengths(
        cache: *mut snn_forward_cache,
        lengths: *const i32,
        n: usize,
    ) -> snn_status;
    /// Gathers lengths by index: length i is `lengths[indices[i]]`.
    pub fn snn_set_lengths_gather(
        cache: *mut snn_forward_cache,
        lengths: *const i32,
        sample_count: usize,
        indices: *const i64,
        n: usize,
    ) -> snn_status;

    // Losses and backpropagation
    /// Gradient buffers for batches up to `max_batch`.
    pub fn snn_preallocate_grads(
        model: *const snn_model,
        max_batch: i64,
        out: *mut *mut snn_backward_cache,
    ) -> snn_status;
    /// Frees a backward cache; NULL is accepted.
    pub fn snn_backward_cache_destroy(cache: *mut snn_backward_cache);
    /// Targets for `SNN_LOSS_MSE`, `[batch][outputs]`, copied.
    pub fn snn_set_targets(
        cache: *mut snn_backward_cache,
        targets: *const f32,
        count: usize,
    ) -> snn_status;
    /// 0-based class labels for `SNN_LOSS_LOGIT_CROSSENTROPY`, copied (batch * T for a sequence
    /// output, -1 ignoring a step).
    pub fn snn_set_labels(
        cache: *mut snn_backward_cache,
        labels: *const i32,
        n: usize,
    ) -> snn_status;
    /// Gathers labels by index: label i is `labels[indices[i]]` (the T labels from
    /// `labels[indices[i] * T]` for a sequence output; sample_count counts samples).
    pub fn snn_set_labels_gather(
        cache: *mut snn_backward_cache,
        labels: *const i32,
        sample_count: usize,
        indices: *const i64,
        n: usize,
    ) -> snn_status;
    /// With enabled = 1, backprop also computes the gradient with respect to the inputs.
    pub fn snn_set_input_gradient(cache: *mut snn_backward_cache, enabled: i32) -> snn_status;
    /// Sets the parameter of a loss that has one (Huber's delta, ...) on this cache.
    pub fn snn_set_loss_parameter(
        cache: *mut snn_backward_cache,
        loss: snn_loss,
        value: f64,
    ) -> snn_status;
    /// The parameter of a loss on this cache (its default until set).
    pub fn snn_get_loss_parameter(
        cache: *const snn_backward_cache,
        loss: snn_loss,
        value: *mut f64,
    ) -> snn_status;
    /// The loss of the last forward pass and its gradient with respect to every parameter.
    pub fn snn_backprop(
        bwd: *mut snn_backward_cache,
        fwd: *mut snn_forward_cache,
        model: *const snn_model,
        loss: snn_loss,
        loss_value: *mut f32,
    ) -> snn_status;
    /// Backpropagates a caller-supplied gradient with respect to the outputs.
    pub fn snn_backprop_with_output_gradient(
        bwd: *mut snn_backward_cache,
        fwd: *mut snn_forward_cache,
        model: *const snn_model,
        output_gradient: *const f32,
        count: usize,
    ) -> snn_status;
    /// Zero-copy view of the flat gradient (CPU caches).
    pub fn snn_gradients(
        cache: *const snn_backward_cache,
        data: *mut *const f32,
        count: *mut usize,
    ) -> snn_status;
    /// Copies the gradient into `dst`; count = parameter count.
    pub fn snn_get_gradients(
        cache: *const snn_backward_cache,
        dst: *mut f32,
        count: usize,
    ) -> snn_status;
    /// Overwrites the gradient from `src`; count = parameter count.
    pub fn snn_set_gradients(
        cache: *mut snn_backward_cache,
        src: *const f32,
        count: usize,
    ) -> snn_status;
    /// Copies the gradient with respect to the inputs; count = batch * features.
    pub fn snn_get_input_gradients(
        cache: *const snn_backward_cache,
        dst: *mut f32,
        count: usize,
    ) -> snn_status;

    // Optimisers
    /// An optimiser for `model` with PyTorch's defaults.
    pub fn snn_optimiser_create(
        model: *const snn_model,
        kind: snn_optimiser_kind,
        out: *mut *mut snn_optimiser,
    ) -> snn_status;
    /// Frees an optimiser; NULL is accepted.
    pub fn snn_optimiser_destroy(optimiser: *mut snn_optimiser);
    /// Sets a hyperparameter; a failed call changes nothing.
    pub fn snn_optimiser_set(
        optimiser: *mut snn_optimiser,
        which: snn_hyperparameter,
        value: f64,
    ) -> snn_status;
    /// Reads a hyperparameter.
    pub fn snn_optimiser_get(
        optimiser: *const snn_optimiser,
        which: snn_hyperparameter,
        value: *mut f64,
    ) -> snn_status;
    /// Updates the model's parameters from the gradient in `grads`.
    pub fn snn_optimiser_step(
        optimiser: *mut snn_optimiser,
        model: *mut snn_model,
        grads: *const snn_backward_cache,
    ) -> snn_status;
    /// Zeroes the moments and the step count.
    pub fn snn_optimiser_reset(optimiser: *mut snn_optimiser) -> snn_status;
    /// Steps taken since creation or reset.
    pub fn snn_optimiser_step_count(optimiser: *const snn_optimiser, steps: *mut i64) -> snn_status;
    /// The gradient norm of the last step, which clipped.
    pub fn snn_optimiser_grad_norm(optimiser: *const snn_optimiser, norm: *mut f64) -> snn_status;

    // Mixed precision
    /// Sets the precision of the cache's next passes (plans again).
    pub fn snn_cache_set_precision(
        cache: *mut snn_forward_cache,
        precision: snn_precision,
    ) -> snn_status;
    /// The precision of the cache's passes.
    pub fn snn_cache_precision(
        cache: *const snn_forward_cache,
        precision: *mut snn_precision,
    ) -> snn_status;
    /// `SNN_OK` when `device` can compute in `precision`; `*native` 1 when natively.
    pub fn snn_precision_support(
        device: i32,
        precision: snn_precision,
        native: *mut i32,
    ) -> snn_status;
    /// Turns dynamic loss scaling on (PyTorch's defaults) or off.
    pub fn snn_set_loss_scaling(cache: *mut snn_backward_cache, on: i32) -> snn_status;
    /// Turns loss scaling on with these settings and state.
    pub fn snn_set_loss_scaling_state(
        cache: *mut snn_backward_cache,
        scale: f64,
        growth_factor: f64,
        backoff_factor: f64,
        growth_interval: i64,
        good_steps: i64,
    ) -> snn_status;
    /// Reads the loss scaling; every out pointer may be NULL.
    pub fn snn_loss_scaling_state(
        cache: *const snn_backward_cache,
        on: *mut i32,
        scale: *mut f64,
        growth_factor: *mut f64,
        backoff_factor: *mut f64,
        growth_interval: *mut i64,
        good_steps: *mut i64,
        skipped: *mut i32,
    ) -> snn_status;

    // Model files and checkpoints
    /// Saves the model to a safetensors file, atomically.
    pub fn snn_model_save(model: *const snn_model, path: *const c_char) -> snn_status;
    /// Loads a model file onto the CPU.
    pub fn snn_model_load(path: *const c_char, out: *mut *mut snn_model) -> snn_status;
    /// Writes the model file into `buf`, or with `buf` NULL only its size.
    pub fn snn_model_save_to_buffer(
        model: *const snn_model,
        buf: *mut c_void,
        capacity: usize,
        size: *mut usize,
    ) -> snn_status;
    /// Reads a model from the bytes of a model file.
    pub fn snn_model_load_from_buffer(
        data: *const c_void,
        size: usize,
        out: *mut *mut snn_model,
    ) -> snn_status;

    // ONNX
    /// Writes the model as an ONNX file (opset 17).
    pub fn snn_model_export_onnx(
        model: *const snn_model,
        options: *const snn_onnx_export_options,
        path: *const c_char,
    ) -> snn_status;
    /// Writes the ONNX file into `buf`, or with `buf` NULL only its size.
    pub fn snn_model_export_onnx_to_buffer(
        model: *const snn_model,
        options: *const snn_onnx_export_options,
        buf: *mut c_void,
        capacity: usize,
        size: *mut usize,
    ) -> snn_status;
    /// Reads an ONNX file into a new CPU model.
    pub fn snn_model_import_onnx(
        path: *const c_char,
        options: *const snn_onnx_import_options,
        out: *mut *mut snn_model,
    ) -> snn_status;
    /// Reads an ONNX model from memory into a new CPU model.
    pub fn snn_model_import_onnx_from_buffer(
        data: *const c_void,
        size: usize,
        options: *const snn_onnx_import_options,
        out: *mut *mut snn_model,
    ) -> snn_status;
    /// Saves the model and the optimiser's kind, settings, step count and moments.
    pub fn snn_checkpoint_save(
        model: *const snn_model,
        optimiser: *const snn_optimiser,
        path: *const c_char,
    ) -> snn_status;
    /// Loads a checkpoint as a CPU model and its optimiser.
    pub fn snn_checkpoint_load(
        path: *const c_char,
        model_out: *mut *mut snn_model,
        optimiser_out: *mut *mut snn_optimiser,
    ) -> snn_status;
    /// A checkpoint plus the loss scaling of `cache` (NULL or off: none).
    pub fn snn_checkpoint_save_v2(
        model: *const snn_model,
        optimiser: *const snn_optimiser,
        cache: *const snn_backward_cache,
        path: *const c_char,
    ) -> snn_status;
    /// Sets the cache's loss scaling to the checkpoint's (off when it holds none).
    pub fn snn_checkpoint_load_loss_scaling(
        path: *const c_char,
        cache: *mut snn_backward_cache,
    ) -> snn_status;

    // Devices
    /// Number of usable GPUs (0 without plugin, driver or device).
    pub fn snn_gpu_count() -> i32;
    /// `SNN_OK` when GPU `device` can be used, else the reason.
    pub fn snn_gpu_status(device: i32) -> snn_status;
    /// Moves the model to GPU `device`.
    pub fn snn_to_gpu(model: *mut snn_model, device: i32) -> snn_status;
    /// Moves the model to the CPU.
    pub fn snn_to_cpu(model: *mut snn_model) -> snn_status;
    /// Moves the model to GPU 0 when one can be used; writes where it is.
    pub fn snn_to_best_device(model: *mut snn_model, device: *mut i32) -> snn_status;
    /// Where the model lives: `SNN_DEVICE_CPU` or a GPU index.
    pub fn snn_model_device(model: *const snn_model, device: *mut i32) -> snn_status;
    /// Lets GPU caches created afterwards use TF32 math.
    pub fn snn_set_allow_tf32(on: i32) -> snn_status;
    /// Copies inputs that live in GPU memory on the cache's device.
    pub fn snn_set_inputs_device(
        cache: *mut snn_forward_cache,
        device_inputs: *const f32,
        count: usize,
    ) -> snn_status;
    /// Copies samples (and optional labels) to a device.
    pub fn snn_dataset_create(
        device: i32,
        samples: *const f32,
        sample_count: usize,
        features: usize,
        labels: *const i32,
        out: *mut *mut snn_dataset,
    ) -> snn_status;
    /// Frees a data set; NULL is accepted.
    pub fn snn_dataset_destroy(dataset: *mut snn_dataset);
    /// Gathers samples of a data set into a forward cache; the batch becomes n.
    pub fn snn_set_inputs_from_dataset(
        cache: *mut snn_forward_cache,
        dataset: *const snn_dataset,
        indices: *const i64,
        n: usize,
    ) -> snn_status;
    /// Gathers labels of a data set into a backward cache.
    pub fn snn_set_labels_from_dataset(
        cache: *mut snn_backward_cache,
        dataset: *const snn_dataset,
        indices: *const i64,
        n: usize,
    ) -> snn_status;
    /// Copies token ids (optional lengths and labels, 1 or `steps` per sample) to a device.
    pub fn snn_dataset_create_tokens(
        device: i32,
        tokens: *const i32,
        sample_count: usize,
        steps: usize,
        lengths: *const i32,
        labels: *const i32,
        labels_per_sample: usize,
        out: *mut *mut snn_dataset,
    ) -> snn_status;

    // Native GPU interoperation
    /// The device pointer and length of a GPU cache's flat gradient.
    pub fn snn_gradients_device(
        cache: *mut snn_backward_cache,
        data: *mut *mut f32,
        count: *mut usize,
    ) -> snn_status;
    /// Waits for the work queued on the cache.
    pub fn snn_backward_cache_synchronize(cache: *mut snn_backward_cache) -> snn_status;
}
