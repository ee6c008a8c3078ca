//! Raw declarations of every function of `include/snn.h`, one to one.
//!
//! `tools/abi_check.py --rust` compares these with the header (names, argument
//! counts and types, const included). A function deliberately left out would be
//! listed here in a line `abi-omitted: <name> <reason>`; none is.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_void};

pub type snn_status = i32;
pub type snn_loss = i32;
pub type snn_optimiser_kind = i32;
pub type snn_hyperparameter = i32;
pub type snn_log_fn = Option<unsafe extern "C" fn(*mut c_void, i32, *const c_char)>;

/// Opaque handles: only ever used behind pointers.
#[repr(C)]
pub struct snn_model {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct snn_forward_cache {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct snn_backward_cache {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct snn_optimiser {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct snn_dataset {
    _opaque: [u8; 0],
}

pub const SNN_OK: snn_status = 0;
pub const SNN_DEVICE_CPU: i32 = -1;

pub const SNN_LOSS_MSE: snn_loss = 1;
pub const SNN_LOSS_LOGIT_CROSSENTROPY: snn_loss = 2;

pub const SNN_OPTIMISER_SGD: snn_optimiser_kind = 1;
pub const SNN_OPTIMISER_ADAM: snn_optimiser_kind = 2;
pub const SNN_OPTIMISER_ADAMW: snn_optimiser_kind = 3;
pub const SNN_OPTIMISER_RMSPROP: snn_optimiser_kind = 4;

pub const SNN_HP_LEARNING_RATE: snn_hyperparameter = 1;
pub const SNN_HP_MOMENTUM: snn_hyperparameter = 2;
pub const SNN_HP_NESTEROV: snn_hyperparameter = 3;
pub const SNN_HP_BETA1: snn_hyperparameter = 4;
pub const SNN_HP_BETA2: snn_hyperparameter = 5;
pub const SNN_HP_EPSILON: snn_hyperparameter = 6;
pub const SNN_HP_WEIGHT_DECAY: snn_hyperparameter = 7;
pub const SNN_HP_ALPHA: snn_hyperparameter = 8;

pub const SNN_LOG_ERROR: i32 = 0;
pub const SNN_LOG_WARNING: i32 = 1;
pub const SNN_LOG_INFO: i32 = 2;

extern "C" {
    // Version
    pub fn snn_version_number() -> i32;
    pub fn snn_version_string() -> *const c_char;
    pub fn snn_build_features() -> *const c_char;
    pub fn snn_has_feature(feature: *const c_char) -> i32;

    // Status and errors
    pub fn snn_status_string(status: snn_status) -> *const c_char;
    pub fn snn_last_error() -> *const c_char;

    // Settings
    pub fn snn_set_num_threads(n: i32) -> snn_status;
    pub fn snn_get_num_threads() -> i32;
    pub fn snn_set_log_callback(callback: snn_log_fn, user_data: *mut c_void) -> snn_status;
    pub fn snn_set_check_finite(on: i32) -> snn_status;

    // Models
    pub fn snn_model_create(spec: *const c_char, out: *mut *mut snn_model) -> snn_status;
    pub fn snn_model_destroy(model: *mut snn_model);
    pub fn snn_model_describe(
        model: *const snn_model,
        buf: *mut c_char,
        capacity: usize,
        length: *mut usize,
    ) -> snn_status;
    pub fn snn_model_layer_count(model: *const snn_model, count: *mut i64) -> snn_status;
    pub fn snn_model_layer_shape(
        model: *const snn_model,
        layer: i64,
        channels: *mut i64,
        height: *mut i64,
        width: *mut i64,
    ) -> snn_status;
    pub fn snn_model_layer_params(
        model: *const snn_model,
        layer: i64,
        weight_offset: *mut usize,
        weight_count: *mut usize,
        bias_offset: *mut usize,
        bias_count: *mut usize,
    ) -> snn_status;
    pub fn snn_model_input_size(model: *const snn_model, features: *mut usize) -> snn_status;
    pub fn snn_model_output_size(model: *const snn_model, outputs: *mut usize) -> snn_status;
    pub fn snn_parameter_count(model: *const snn_model, count: *mut usize) -> snn_status;
    pub fn snn_model_init(model: *mut snn_model, seed: u64) -> snn_status;
    pub fn snn_parameters(model: *mut snn_model, data: *mut *mut f32, count: *mut usize)
        -> snn_status;
    pub fn snn_get_parameters(model: *const snn_model, dst: *mut f32, count: usize) -> snn_status;
    pub fn snn_set_parameters(model: *mut snn_model, src: *const f32, count: usize) -> snn_status;
    pub fn snn_state_count(model: *const snn_model, count: *mut usize) -> snn_status;
    pub fn snn_get_state(model: *const snn_model, dst: *mut f32, count: usize) -> snn_status;
    pub fn snn_set_state(model: *mut snn_model, src: *const f32, count: usize) -> snn_status;
    pub fn snn_model_layer_state(
        model: *const snn_model,
        layer: i64,
        offset: *mut usize,
        count: *mut usize,
    ) -> snn_status;

    // Forward pass
    pub fn snn_preallocate(
        model: *const snn_model,
        max_batch: i64,
        out: *mut *mut snn_forward_cache,
    ) -> snn_status;
    pub fn snn_forward_cache_destroy(cache: *mut snn_forward_cache);
    pub fn snn_cache_set_batch(cache: *mut snn_forward_cache, batch: i64) -> snn_status;
    pub fn snn_cache_set_training(cache: *mut snn_forward_cache, on: i32) -> snn_status;
    pub fn snn_cache_training(cache: *const snn_forward_cache, on: *mut i32) -> snn_status;
    pub fn snn_cache_set_seed(cache: *mut snn_forward_cache, seed: u64) -> snn_status;
    pub fn snn_cache_rng_state(
        cache: *const snn_forward_cache,
        seed: *mut u64,
        passes: *mut u64,
    ) -> snn_status;
    pub fn snn_cache_set_rng_state(
        cache: *mut snn_forward_cache,
        seed: u64,
        passes: u64,
    ) -> snn_status;
    pub fn snn_cache_batch(
        cache: *const snn_forward_cache,
        batch: *mut i64,
        max_batch: *mut i64,
    ) -> snn_status;
    pub fn snn_set_inputs(cache: *mut snn_forward_cache, inputs: *const f32, count: usize)
        -> snn_status;
    pub fn snn_set_inputs_gather(
        cache: *mut snn_forward_cache,
        data: *const f32,
        sample_count: usize,
        indices: *const i64,
        n: usize,
    ) -> snn_status;
    pub fn snn_forward(cache: *mut snn_forward_cache, model: *const snn_model) -> snn_status;
    pub fn snn_outputs(
        cache: *const snn_forward_cache,
        data: *mut *const f32,
        count: *mut usize,
    ) -> snn_status;
    pub fn snn_get_outputs(cache: *const snn_forward_cache, dst: *mut f32, count: usize)
        -> snn_status;

    // Losses and backpropagation
    pub fn snn_preallocate_grads(
        model: *const snn_model,
        max_batch: i64,
        out: *mut *mut snn_backward_cache,
    ) -> snn_status;
    pub fn snn_backward_cache_destroy(cache: *mut snn_backward_cache);
    pub fn snn_set_targets(cache: *mut snn_backward_cache, targets: *const f32, count: usize)
        -> snn_status;
    pub fn snn_set_labels(cache: *mut snn_backward_cache, labels: *const i32, n: usize)
        -> snn_status;
    pub fn snn_set_labels_gather(
        cache: *mut snn_backward_cache,
        labels: *const i32,
        sample_count: usize,
        indices: *const i64,
        n: usize,
    ) -> snn_status;
    pub fn snn_set_input_gradient(cache: *mut snn_backward_cache, enabled: i32) -> snn_status;
    pub fn snn_backprop(
        bwd: *mut snn_backward_cache,
        fwd: *mut snn_forward_cache,
        model: *const snn_model,
        loss: snn_loss,
        loss_value: *mut f32,
    ) -> snn_status;
    pub fn snn_backprop_with_output_gradient(
        bwd: *mut snn_backward_cache,
        fwd: *mut snn_forward_cache,
        model: *const snn_model,
        output_gradient: *const f32,
        count: usize,
    ) -> snn_status;
    pub fn snn_gradients(
        cache: *const snn_backward_cache,
        data: *mut *const f32,
        count: *mut usize,
    ) -> snn_status;
    pub fn snn_get_gradients(cache: *const snn_backward_cache, dst: *mut f32, count: usize)
        -> snn_status;
    pub fn snn_set_gradients(cache: *mut snn_backward_cache, src: *const f32, count: usize)
        -> snn_status;
    pub fn snn_get_input_gradients(
        cache: *const snn_backward_cache,
        dst: *mut f32,
        count: usize,
    ) -> snn_status;

    // Optimisers
    pub fn snn_optimiser_create(
        model: *const snn_model,
        kind: snn_optimiser_kind,
        out: *mut *mut snn_optimiser,
    ) -> snn_status;
    pub fn snn_optimiser_destroy(optimiser: *mut snn_optimiser);
    pub fn snn_optimiser_set(
        optimiser: *mut snn_optimiser,
        which: snn_hyperparameter,
        value: f64,
    ) -> snn_status;
    pub fn snn_optimiser_get(
        optimiser: *const snn_optimiser,
        which: snn_hyperparameter,
        value: *mut f64,
    ) -> snn_status;
    pub fn snn_optimiser_step(
        optimiser: *mut snn_optimiser,
        model: *mut snn_model,
        grads: *const snn_backward_cache,
    ) -> snn_status;
    pub fn snn_optimiser_reset(optimiser: *mut snn_optimiser) -> snn_status;
    pub fn snn_optimiser_step_count(optimiser: *const snn_optimiser, steps: *mut i64)
        -> snn_status;

    // Model files and checkpoints
    pub fn snn_model_save(model: *const snn_model, path: *const c_char) -> snn_status;
    pub fn snn_model_load(path: *const c_char, out: *mut *mut snn_model) -> snn_status;
    pub fn snn_model_save_to_buffer(
        model: *const snn_model,
        buf: *mut c_void,
        capacity: usize,
        size: *mut usize,
    ) -> snn_status;
    pub fn snn_model_load_from_buffer(
        data: *const c_void,
        size: usize,
        out: *mut *mut snn_model,
    ) -> snn_status;
    pub fn snn_checkpoint_save(
        model: *const snn_model,
        optimiser: *const snn_optimiser,
        path: *const c_char,
    ) -> snn_status;
    pub fn snn_checkpoint_load(
        path: *const c_char,
        model_out: *mut *mut snn_model,
        optimiser_out: *mut *mut snn_optimiser,
    ) -> snn_status;

    // Devices
    pub fn snn_gpu_count() -> i32;
    pub fn snn_gpu_status(device: i32) -> snn_status;
    pub fn snn_to_gpu(model: *mut snn_model, device: i32) -> snn_status;
    pub fn snn_to_cpu(model: *mut snn_model) -> snn_status;
    pub fn snn_to_best_device(model: *mut snn_model, device: *mut i32) -> snn_status;
    pub fn snn_model_device(model: *const snn_model, device: *mut i32) -> snn_status;
    pub fn snn_set_allow_tf32(on: i32) -> snn_status;
    pub fn snn_set_inputs_device(
        cache: *mut snn_forward_cache,
        device_inputs: *const f32,
        count: usize,
    ) -> snn_status;
    pub fn snn_dataset_create(
        device: i32,
        samples: *const f32,
        sample_count: usize,
        features: usize,
        labels: *const i32,
        out: *mut *mut snn_dataset,
    ) -> snn_status;
    pub fn snn_dataset_destroy(dataset: *mut snn_dataset);
    pub fn snn_set_inputs_from_dataset(
        cache: *mut snn_forward_cache,
        dataset: *const snn_dataset,
        indices: *const i64,
        n: usize,
    ) -> snn_status;
    pub fn snn_set_labels_from_dataset(
        cache: *mut snn_backward_cache,
        dataset: *const snn_dataset,
        indices: *const i64,
        n: usize,
    ) -> snn_status;

    // Native GPU interoperation (a device pointer, for CUDA code)
    pub fn snn_gradients_device(
        cache: *mut snn_backward_cache,
        data: *mut *mut f32,
        count: *mut usize,
    ) -> snn_status;
    pub fn snn_backward_cache_synchronize(cache: *mut snn_backward_cache) -> snn_status;
}
