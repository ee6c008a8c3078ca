# Generated from include/snn.h by tools/gen_bindings.py: do not edit by hand.
#
# Raw declarations of every function of include/snn.h, one ccall each, and its
# constants (enum members and numeric #defines) under their C names.
# bindings/julia/tools/check_ccalls.js compares them with the header: names,
# argument counts, argument and return types, constant values. Handles are
# Ptr{Cvoid}; the library is the global `libsnn` of SNN.jl.

# Constants
const SNN_VERSION_MAJOR = 0
const SNN_VERSION_MINOR = 1
const SNN_VERSION_PATCH = 0
const SNN_VERSION_NUMBER = 1000

const SNN_OK = Int32(0)
const SNN_ERR_NULL_ARGUMENT = Int32(1)
const SNN_ERR_INVALID_ARGUMENT = Int32(2)
const SNN_ERR_SPEC = Int32(3)
const SNN_ERR_SHAPE = Int32(4)
const SNN_ERR_COUNT = Int32(5)
const SNN_ERR_BATCH = Int32(6)
const SNN_ERR_LABEL = Int32(7)
const SNN_ERR_MODEL_MISMATCH = Int32(8)
const SNN_ERR_DEVICE_MISMATCH = Int32(9)
const SNN_ERR_STATE = Int32(10)
const SNN_ERR_OUT_OF_MEMORY = Int32(11)
const SNN_ERR_NOT_FINITE = Int32(12)
const SNN_ERR_IO = Int32(13)
const SNN_ERR_FILE_FORMAT = Int32(14)
const SNN_ERR_UNSUPPORTED = Int32(15)
const SNN_ERR_GPU_PLUGIN_NOT_FOUND = Int32(16)
const SNN_ERR_GPU_DRIVER = Int32(17)
const SNN_ERR_NO_GPU = Int32(18)
const SNN_ERR_GPU_INDEX = Int32(19)
const SNN_ERR_CUDA = Int32(20)
const SNN_ERR_INTERNAL = Int32(21)
const SNN_ERR_TOKEN = Int32(22)

const SNN_LOG_ERROR = Int32(0)
const SNN_LOG_WARNING = Int32(1)
const SNN_LOG_INFO = Int32(2)

const SNN_DEVICE_CPU = Int32(-1)
const SNN_MAX_LAYERS = 100000
const SNN_MAX_SPEC_LENGTH = 4194304

const SNN_LOSS_MSE = Int32(1)
const SNN_LOSS_LOGIT_CROSSENTROPY = Int32(2)
const SNN_LOSS_HUBER = Int32(3)
const SNN_LOSS_SMOOTH_L1 = Int32(4)
const SNN_LOSS_BCE_WITH_LOGITS = Int32(5)

const SNN_OPTIMISER_SGD = Int32(1)
const SNN_OPTIMISER_ADAM = Int32(2)
const SNN_OPTIMISER_ADAMW = Int32(3)
const SNN_OPTIMISER_RMSPROP = Int32(4)
const SNN_OPTIMISER_LION = Int32(5)

const SNN_HP_LEARNING_RATE = Int32(1)
const SNN_HP_MOMENTUM = Int32(2)
const SNN_HP_NESTEROV = Int32(3)
const SNN_HP_BETA1 = Int32(4)
const SNN_HP_BETA2 = Int32(5)
const SNN_HP_EPSILON = Int32(6)
const SNN_HP_WEIGHT_DECAY = Int32(7)
const SNN_HP_ALPHA = Int32(8)
const SNN_HP_DAMPENING = Int32(9)
const SNN_HP_MAX_GRAD_NORM = Int32(10)

const SNN_PRECISION_FLOAT32 = Int32(0)
const SNN_PRECISION_BF16 = Int32(1)
const SNN_PRECISION_FP16 = Int32(2)

# Version
snn_version_number() = ccall((:snn_version_number, libsnn), Int32, ())
snn_version_string() = ccall((:snn_version_string, libsnn), Cstring, ())
snn_build_features() = ccall((:snn_build_features, libsnn), Cstring, ())
snn_has_feature(feature) = ccall((:snn_has_feature, libsnn), Int32, (Cstring,), feature)

# Status and errors
snn_status_string(status) = ccall((:snn_status_string, libsnn), Cstring, (Cint,), status)
snn_last_error() = ccall((:snn_last_error, libsnn), Cstring, ())

# Settings (process-wide)
snn_set_num_threads(n) = ccall((:snn_set_num_threads, libsnn), Cint, (Int32,), n)
snn_get_num_threads() = ccall((:snn_get_num_threads, libsnn), Int32, ())
snn_set_cpu_isa(level) = ccall((:snn_set_cpu_isa, libsnn), Cint, (Cstring,), level)
snn_cpu_isa() = ccall((:snn_cpu_isa, libsnn), Cstring, ())
snn_set_log_callback(callback, user_data) =
    ccall((:snn_set_log_callback, libsnn), Cint, (Ptr{Cvoid}, Ptr{Cvoid}), callback, user_data)
snn_set_check_finite(on) = ccall((:snn_set_check_finite, libsnn), Cint, (Int32,), on)

# Models
snn_model_create(spec, out) =
    ccall((:snn_model_create, libsnn), Cint, (Cstring, Ptr{Ptr{Cvoid}}), spec, out)
snn_model_destroy(model) = ccall((:snn_model_destroy, libsnn), Cvoid, (Ptr{Cvoid},), model)
snn_model_describe(model, buf, capacity, length) =
    ccall((:snn_model_describe, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{UInt8}, Csize_t, Ptr{Csize_t}),
          model, buf, capacity, length)
snn_model_layer_count(model, count) =
    ccall((:snn_model_layer_count, libsnn), Cint, (Ptr{Cvoid}, Ptr{Int64}), model, count)
snn_model_layer_shape(model, layer, channels, height, width) =
    ccall((:snn_model_layer_shape, libsnn), Cint,
          (Ptr{Cvoid}, Int64, Ptr{Int64}, Ptr{Int64}, Ptr{Int64}),
          model, layer, channels, height, width)
snn_model_layer_params(model, layer, weight_offset, weight_count, bias_offset, bias_count) =
    ccall((:snn_model_layer_params, libsnn), Cint,
          (Ptr{Cvoid}, Int64, Ptr{Csize_t}, Ptr{Csize_t}, Ptr{Csize_t}, Ptr{Csize_t}),
          model, layer, weight_offset, weight_count, bias_offset, bias_count)
snn_model_input_size(model, features) =
    ccall((:snn_model_input_size, libsnn), Cint, (Ptr{Cvoid}, Ptr{Csize_t}), model, features)
snn_model_output_size(model, outputs) =
    ccall((:snn_model_output_size, libsnn), Cint, (Ptr{Cvoid}, Ptr{Csize_t}), model, outputs)
snn_parameter_count(model, count) =
    ccall((:snn_parameter_count, libsnn), Cint, (Ptr{Cvoid}, Ptr{Csize_t}), model, count)
snn_model_init(model, seed) =
    ccall((:snn_model_init, libsnn), Cint, (Ptr{Cvoid}, UInt64), model, seed)
snn_parameters(model, data, count) =
    ccall((:snn_parameters, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Ptr{Cfloat}}, Ptr{Csize_t}),
          model, data, count)
snn_get_parameters(model, dst, count) =
    ccall((:snn_get_parameters, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t),
          model, dst, count)
snn_set_parameters(model, src, count) =
    ccall((:snn_set_parameters, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t),
          model, src, count)
snn_state_count(model, count) =
    ccall((:snn_state_count, libsnn), Cint, (Ptr{Cvoid}, Ptr{Csize_t}), model, count)
snn_get_state(model, dst, count) =
    ccall((:snn_get_state, libsnn), Cint, (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t), model, dst, count)
snn_set_state(model, src, count) =
    ccall((:snn_set_state, libsnn), Cint, (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t), model, src, count)
snn_model_layer_state(model, layer, offset, count) =
    ccall((:snn_model_layer_state, libsnn), Cint,
          (Ptr{Cvoid}, Int64, Ptr{Csize_t}, Ptr{Csize_t}),
          model, layer, offset, count)

# Forward pass
snn_preallocate(model, max_batch, out) =
    ccall((:snn_preallocate, libsnn), Cint,
          (Ptr{Cvoid}, Int64, Ptr{Ptr{Cvoid}}),
          model, max_batch, out)
snn_forward_cache_destroy(cache) =
    ccall((:snn_forward_cache_destroy, libsnn), Cvoid, (Ptr{Cvoid},), cache)
snn_cache_set_batch(cache, batch) =
    ccall((:snn_cache_set_batch, libsnn), Cint, (Ptr{Cvoid}, Int64), cache, batch)
snn_cache_batch(cache, batch, max_batch) =
    ccall((:snn_cache_batch, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Int64}, Ptr{Int64}),
          cache, batch, max_batch)
snn_cache_set_training(cache, on) =
    ccall((:snn_cache_set_training, libsnn), Cint, (Ptr{Cvoid}, Int32), cache, on)
snn_cache_training(cache, on) =
    ccall((:snn_cache_training, libsnn), Cint, (Ptr{Cvoid}, Ptr{Int32}), cache, on)
snn_cache_set_inference_rewrites(cache, on) =
    ccall((:snn_cache_set_inference_rewrites, libsnn), Cint, (Ptr{Cvoid}, Int32), cache, on)
snn_cache_inference_rewrites(cache, on) =
    ccall((:snn_cache_inference_rewrites, libsnn), Cint, (Ptr{Cvoid}, Ptr{Int32}), cache, on)
snn_cache_set_seed(cache, seed) =
    ccall((:snn_cache_set_seed, libsnn), Cint, (Ptr{Cvoid}, UInt64), cache, seed)
snn_cache_rng_state(cache, seed, passes) =
    ccall((:snn_cache_rng_state, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{UInt64}, Ptr{UInt64}),
          cache, seed, passes)
snn_cache_set_rng_state(cache, seed, passes) =
    ccall((:snn_cache_set_rng_state, libsnn), Cint,
          (Ptr{Cvoid}, UInt64, UInt64),
          cache, seed, passes)
snn_set_inputs(cache, inputs, count) =
    ccall((:snn_set_inputs, libsnn), Cint, (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t), cache, inputs, count)
snn_set_inputs_gather(cache, data, sample_count, indices, n) =
    ccall((:snn_set_inputs_gather, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t, Ptr{Int64}, Csize_t),
          cache, data, sample_count, indices, n)
snn_forward(cache, model) =
    ccall((:snn_forward, libsnn), Cint, (Ptr{Cvoid}, Ptr{Cvoid}), cache, model)
snn_outputs(cache, data, count) =
    ccall((:snn_outputs, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Ptr{Cfloat}}, Ptr{Csize_t}),
          cache, data, count)
snn_get_outputs(cache, dst, count) =
    ccall((:snn_get_outputs, libsnn), Cint, (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t), cache, dst, count)

# Sequences: token ids and lengths
snn_model_input_sequence(model, steps, vocab) =
    ccall((:snn_model_input_sequence, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Int64}, Ptr{Int64}),
          model, steps, vocab)
snn_set_tokens(cache, tokens, count) =
    ccall((:snn_set_tokens, libsnn), Cint, (Ptr{Cvoid}, Ptr{Int32}, Csize_t), cache, tokens, count)
snn_set_tokens_gather(cache, tokens, sample_count, indices, n) =
    ccall((:snn_set_tokens_gather, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Int32}, Csize_t, Ptr{Int64}, Csize_t),
          cache, tokens, sample_count, indices, n)
snn_set_lengths(cache, lengths, n) =
    ccall((:snn_set_lengths, libsnn), Cint, (Ptr{Cvoid}, Ptr{Int32}, Csize_t), cache, lengths, n)
snn_set_lengths_gather(cache, lengths, sample_count, indices, n) =
    ccall((:snn_set_lengths_gather, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Int32}, Csize_t, Ptr{Int64}, Csize_t),
          cache, lengths, sample_count, indices, n)

# Losses and backpropagation
snn_preallocate_grads(model, max_batch, out) =
    ccall((:snn_preallocate_grads, libsnn), Cint,
          (Ptr{Cvoid}, Int64, Ptr{Ptr{Cvoid}}),
          model, max_batch, out)
snn_backward_cache_destroy(cache) =
    ccall((:snn_backward_cache_destroy, libsnn), Cvoid, (Ptr{Cvoid},), cache)
snn_set_targets(cache, targets, count) =
    ccall((:snn_set_targets, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t),
          cache, targets, count)
snn_set_labels(cache, labels, n) =
    ccall((:snn_set_labels, libsnn), Cint, (Ptr{Cvoid}, Ptr{Int32}, Csize_t), cache, labels, n)
snn_set_labels_gather(cache, labels, sample_count, indices, n) =
    ccall((:snn_set_labels_gather, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Int32}, Csize_t, Ptr{Int64}, Csize_t),
          cache, labels, sample_count, indices, n)
snn_set_input_gradient(cache, enabled) =
    ccall((:snn_set_input_gradient, libsnn), Cint, (Ptr{Cvoid}, Int32), cache, enabled)
snn_set_loss_parameter(cache, loss, value) =
    ccall((:snn_set_loss_parameter, libsnn), Cint, (Ptr{Cvoid}, Int32, Cdouble), cache, loss, value)
snn_get_loss_parameter(cache, loss, value) =
    ccall((:snn_get_loss_parameter, libsnn), Cint,
          (Ptr{Cvoid}, Int32, Ptr{Cdouble}),
          cache, loss, value)
snn_backprop(bwd, fwd, model, loss, loss_value) =
    ccall((:snn_backprop, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, Int32, Ptr{Cfloat}),
          bwd, fwd, model, loss, loss_value)
snn_backprop_with_output_gradient(bwd, fwd, model, output_gradient, count) =
    ccall((:snn_backprop_with_output_gradient, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cfloat}, Csize_t),
          bwd, fwd, model, output_gradient, count)
snn_gradients(cache, data, count) =
    ccall((:snn_gradients, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Ptr{Cfloat}}, Ptr{Csize_t}),
          cache, data, count)
snn_get_gradients(cache, dst, count) =
    ccall((:snn_get_gradients, libsnn), Cint, (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t), cache, dst, count)
snn_set_gradients(cache, src, count) =
    ccall((:snn_set_gradients, libsnn), Cint, (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t), cache, src, count)
snn_get_input_gradients(cache, dst, count) =
    ccall((:snn_get_input_gradients, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t),
          cache, dst, count)

# Optimisers
snn_optimiser_create(model, kind, out) =
    ccall((:snn_optimiser_create, libsnn), Cint,
          (Ptr{Cvoid}, Int32, Ptr{Ptr{Cvoid}}),
          model, kind, out)
snn_optimiser_destroy(optimiser) =
    ccall((:snn_optimiser_destroy, libsnn), Cvoid, (Ptr{Cvoid},), optimiser)
snn_optimiser_set(optimiser, which, value) =
    ccall((:snn_optimiser_set, libsnn), Cint, (Ptr{Cvoid}, Int32, Cdouble), optimiser, which, value)
snn_optimiser_get(optimiser, which, value) =
    ccall((:snn_optimiser_get, libsnn), Cint,
          (Ptr{Cvoid}, Int32, Ptr{Cdouble}),
          optimiser, which, value)
snn_optimiser_step(optimiser, model, grads) =
    ccall((:snn_optimiser_step, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}),
          optimiser, model, grads)
snn_optimiser_reset(optimiser) =
    ccall((:snn_optimiser_reset, libsnn), Cint, (Ptr{Cvoid},), optimiser)
snn_optimiser_step_count(optimiser, steps) =
    ccall((:snn_optimiser_step_count, libsnn), Cint, (Ptr{Cvoid}, Ptr{Int64}), optimiser, steps)
snn_optimiser_grad_norm(optimiser, norm) =
    ccall((:snn_optimiser_grad_norm, libsnn), Cint, (Ptr{Cvoid}, Ptr{Cdouble}), optimiser, norm)

# Mixed precision
snn_cache_set_precision(cache, precision) =
    ccall((:snn_cache_set_precision, libsnn), Cint, (Ptr{Cvoid}, Int32), cache, precision)
snn_cache_precision(cache, precision) =
    ccall((:snn_cache_precision, libsnn), Cint, (Ptr{Cvoid}, Ptr{Int32}), cache, precision)
snn_precision_support(device, precision, native) =
    ccall((:snn_precision_support, libsnn), Cint,
          (Int32, Int32, Ptr{Int32}),
          device, precision, native)
snn_set_loss_scaling(cache, on) =
    ccall((:snn_set_loss_scaling, libsnn), Cint, (Ptr{Cvoid}, Int32), cache, on)
snn_set_loss_scaling_state(cache, scale, growth_factor, backoff_factor, growth_interval, good_steps) =
    ccall((:snn_set_loss_scaling_state, libsnn), Cint,
          (Ptr{Cvoid}, Cdouble, Cdouble, Cdouble, Int64, Int64),
          cache, scale, growth_factor, backoff_factor, growth_interval, good_steps)
snn_loss_scaling_state(cache, on, scale, growth_factor, backoff_factor, growth_interval, good_steps, skipped) =
    ccall((:snn_loss_scaling_state, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Int32}, Ptr{Cdouble}, Ptr{Cdouble}, Ptr{Cdouble}, Ptr{Int64}, Ptr{Int64}, Ptr{Int32}),
          cache, on, scale, growth_factor, backoff_factor, growth_interval, good_steps, skipped)

# Model files and checkpoints
snn_model_save(model, path) =
    ccall((:snn_model_save, libsnn), Cint, (Ptr{Cvoid}, Cstring), model, path)
snn_model_load(path, out) =
    ccall((:snn_model_load, libsnn), Cint, (Cstring, Ptr{Ptr{Cvoid}}), path, out)
snn_model_save_to_buffer(model, buf, capacity, size) =
    ccall((:snn_model_save_to_buffer, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cvoid}, Csize_t, Ptr{Csize_t}),
          model, buf, capacity, size)
snn_model_load_from_buffer(data, size, out) =
    ccall((:snn_model_load_from_buffer, libsnn), Cint,
          (Ptr{Cvoid}, Csize_t, Ptr{Ptr{Cvoid}}),
          data, size, out)

# ONNX
struct SnnOnnxExportOptions
    size::Csize_t
    lengths::Int32
end
struct SnnOnnxImportOptions
    size::Csize_t
    sequence_length::Int64
    batch::Int64
end
snn_model_export_onnx(model, options, path) =
    ccall((:snn_model_export_onnx, libsnn), Cint,
          (Ptr{Cvoid}, Ref{SnnOnnxExportOptions}, Cstring),
          model, options, path)
snn_model_export_onnx_to_buffer(model, options, buf, capacity, size) =
    ccall((:snn_model_export_onnx_to_buffer, libsnn), Cint,
          (Ptr{Cvoid}, Ref{SnnOnnxExportOptions}, Ptr{Cvoid}, Csize_t, Ptr{Csize_t}),
          model, options, buf, capacity, size)
snn_model_import_onnx(path, options, out) =
    ccall((:snn_model_import_onnx, libsnn), Cint,
          (Cstring, Ref{SnnOnnxImportOptions}, Ptr{Ptr{Cvoid}}),
          path, options, out)
snn_model_import_onnx_from_buffer(data, size, options, out) =
    ccall((:snn_model_import_onnx_from_buffer, libsnn), Cint,
          (Ptr{Cvoid}, Csize_t, Ref{SnnOnnxImportOptions}, Ptr{Ptr{Cvoid}}),
          data, size, options, out)
snn_checkpoint_save(model, optimiser, path) =
    ccall((:snn_checkpoint_save, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cvoid}, Cstring),
          model, optimiser, path)
snn_checkpoint_load(path, model_out, optimiser_out) =
    ccall((:snn_checkpoint_load, libsnn), Cint,
          (Cstring, Ptr{Ptr{Cvoid}}, Ptr{Ptr{Cvoid}}),
          path, model_out, optimiser_out)
snn_checkpoint_save_v2(model, optimiser, cache, path) =
    ccall((:snn_checkpoint_save_v2, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Cvoid}, Cstring),
          model, optimiser, cache, path)
snn_checkpoint_load_loss_scaling(path, cache) =
    ccall((:snn_checkpoint_load_loss_scaling, libsnn), Cint, (Cstring, Ptr{Cvoid}), path, cache)

# Devices
snn_gpu_count() = ccall((:snn_gpu_count, libsnn), Int32, ())
snn_gpu_status(device) = ccall((:snn_gpu_status, libsnn), Cint, (Int32,), device)
snn_to_gpu(model, device) = ccall((:snn_to_gpu, libsnn), Cint, (Ptr{Cvoid}, Int32), model, device)
snn_to_cpu(model) = ccall((:snn_to_cpu, libsnn), Cint, (Ptr{Cvoid},), model)
snn_to_best_device(model, device) =
    ccall((:snn_to_best_device, libsnn), Cint, (Ptr{Cvoid}, Ptr{Int32}), model, device)
snn_model_device(model, device) =
    ccall((:snn_model_device, libsnn), Cint, (Ptr{Cvoid}, Ptr{Int32}), model, device)
snn_set_allow_tf32(on) = ccall((:snn_set_allow_tf32, libsnn), Cint, (Int32,), on)
snn_set_inputs_device(cache, device_inputs, count) =
    ccall((:snn_set_inputs_device, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cfloat}, Csize_t),
          cache, device_inputs, count)
snn_dataset_create(device, samples, sample_count, features, labels, out) =
    ccall((:snn_dataset_create, libsnn), Cint,
          (Int32, Ptr{Cfloat}, Csize_t, Csize_t, Ptr{Int32}, Ptr{Ptr{Cvoid}}),
          device, samples, sample_count, features, labels, out)
snn_dataset_destroy(dataset) = ccall((:snn_dataset_destroy, libsnn), Cvoid, (Ptr{Cvoid},), dataset)
snn_set_inputs_from_dataset(cache, dataset, indices, n) =
    ccall((:snn_set_inputs_from_dataset, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Int64}, Csize_t),
          cache, dataset, indices, n)
snn_set_labels_from_dataset(cache, dataset, indices, n) =
    ccall((:snn_set_labels_from_dataset, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Cvoid}, Ptr{Int64}, Csize_t),
          cache, dataset, indices, n)
snn_dataset_create_tokens(device, tokens, sample_count, steps, lengths, labels, labels_per_sample, out) =
    ccall((:snn_dataset_create_tokens, libsnn), Cint,
          (Int32, Ptr{Int32}, Csize_t, Csize_t, Ptr{Int32}, Ptr{Int32}, Csize_t, Ptr{Ptr{Cvoid}}),
          device, tokens, sample_count, steps, lengths, labels, labels_per_sample, out)

# Native GPU interoperation
snn_gradients_device(cache, data, count) =
    ccall((:snn_gradients_device, libsnn), Cint,
          (Ptr{Cvoid}, Ptr{Ptr{Cfloat}}, Ptr{Csize_t}),
          cache, data, count)
snn_backward_cache_synchronize(cache) =
    ccall((:snn_backward_cache_synchronize, libsnn), Cint, (Ptr{Cvoid},), cache)
