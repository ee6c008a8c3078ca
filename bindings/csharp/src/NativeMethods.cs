// Generated from include/snn.h by tools/gen_bindings.py: do not edit by hand.
//
// Raw declarations of every function of include/snn.h, one to one.
// tools/abi_check.py --csharp compares these with the header (names, argument
// counts and types), the SNN_ constants below with its numeric #defines, and the
// public enums of Snn.cs with its enum members (names and values).
//
// Buffers pass as pointers, which Snn.cs takes from pinned spans (fixed), so
// arrays, slices of arrays and native memory all reach the library without a
// copy. Strings pass as NUL-terminated UTF-8 bytes (Library.Utf8z refuses a
// string holding a NUL). Handles pass as SafeHandles (SnnHandle, Handles.cs),
// so a handle cannot be released while a call that uses it runs.
using System;
using System.Runtime.InteropServices;

namespace Snn
{
    /// <summary>snn_onnx_export_options, field for field.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct OnnxExportOptionsNative
    {
        public UIntPtr Size;
        public int Lengths;
    }

    /// <summary>snn_onnx_import_options, field for field.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct OnnxImportOptionsNative
    {
        public UIntPtr Size;
        public long SequenceLength;
        public long Batch;
    }

    internal sealed class ModelHandle : SnnHandle
    {
        protected override void Destroy(IntPtr h) { NativeMethods.snn_model_destroy(h); }
    }

    internal sealed class ForwardCacheHandle : SnnHandle
    {
        protected override void Destroy(IntPtr h) { NativeMethods.snn_forward_cache_destroy(h); }
    }

    internal sealed class BackwardCacheHandle : SnnHandle
    {
        protected override void Destroy(IntPtr h) { NativeMethods.snn_backward_cache_destroy(h); }
    }

    internal sealed class OptimiserHandle : SnnHandle
    {
        protected override void Destroy(IntPtr h) { NativeMethods.snn_optimiser_destroy(h); }
    }

    internal sealed class DatasetHandle : SnnHandle
    {
        protected override void Destroy(IntPtr h) { NativeMethods.snn_dataset_destroy(h); }
    }

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate void LogCallback(IntPtr userData, int level, IntPtr message);

    internal static unsafe class NativeMethods
    {
        internal const string Lib = NativeLibraryName.Import;

        // The numeric #defines of the header
        internal const int SNN_VERSION_MAJOR = 0;
        internal const int SNN_VERSION_MINOR = 1;
        internal const int SNN_VERSION_PATCH = 0;
        internal const int SNN_VERSION_NUMBER = 1000;
        internal const int SNN_DEVICE_CPU = -1;
        internal const int SNN_MAX_LAYERS = 100000;
        internal const int SNN_MAX_SPEC_LENGTH = 4194304;

        // Version
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_version_number();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr snn_version_string();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr snn_build_features();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_has_feature([In] byte[] feature);

        // Status and errors
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr snn_status_string(int status);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr snn_last_error();

        // Settings (process-wide)
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_num_threads(int n);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_get_num_threads();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_cpu_isa([In] byte[] level);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr snn_cpu_isa();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_log_callback(LogCallback callback, IntPtr userData);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_check_finite(int on);

        // Models
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_create([In] byte[] spec, out ModelHandle model);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void snn_model_destroy(IntPtr model);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_describe(ModelHandle model, [Out] byte[] buf, UIntPtr capacity, out UIntPtr length);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_layer_count(ModelHandle model, out long count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_layer_shape(ModelHandle model, long layer, out long channels, out long height, out long width);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_layer_params(ModelHandle model, long layer, out UIntPtr weightOffset, out UIntPtr weightCount, out UIntPtr biasOffset, out UIntPtr biasCount);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_input_size(ModelHandle model, out UIntPtr features);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_output_size(ModelHandle model, out UIntPtr outputs);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_parameter_count(ModelHandle model, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_init(ModelHandle model, ulong seed);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_parameters(ModelHandle model, out IntPtr data, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_get_parameters(ModelHandle model, float* dst, UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_parameters(ModelHandle model, float* src, UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_state_count(ModelHandle model, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_get_state(ModelHandle model, float* dst, UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_state(ModelHandle model, float* src, UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_layer_state(ModelHandle model, long layer, out UIntPtr offset, out UIntPtr count);

        // Forward pass
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_preallocate(ModelHandle model, long maxBatch, out ForwardCacheHandle cache);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void snn_forward_cache_destroy(IntPtr cache);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_cache_set_batch(ForwardCacheHandle cache, long batch);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_cache_batch(ForwardCacheHandle cache, out long batch, out long maxBatch);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_cache_set_training(ForwardCacheHandle cache, int on);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_cache_training(ForwardCacheHandle cache, out int on);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_cache_set_inference_rewrites(ForwardCacheHandle cache, int on);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_cache_inference_rewrites(ForwardCacheHandle cache, out int on);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_cache_set_seed(ForwardCacheHandle cache, ulong seed);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_cache_rng_state(ForwardCacheHandle cache, out ulong seed, out ulong passes);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_cache_set_rng_state(ForwardCacheHandle cache, ulong seed, ulong passes);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_inputs(ForwardCacheHandle cache, float* inputs, UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_inputs_gather(ForwardCacheHandle cache, float* data, UIntPtr sampleCount, long* indices, UIntPtr n);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_forward(ForwardCacheHandle cache, ModelHandle model);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_outputs(ForwardCacheHandle cache, out IntPtr data, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_get_outputs(ForwardCacheHandle cache, float* dst, UIntPtr count);

        // Sequences: token ids and lengths
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_input_sequence(ModelHandle model, out long steps, out long vocab);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_tokens(ForwardCacheHandle cache, int* tokens, UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_tokens_gather(ForwardCacheHandle cache, int* tokens, UIntPtr sampleCount, long* indices, UIntPtr n);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_lengths(ForwardCacheHandle cache, int* lengths, UIntPtr n);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_lengths_gather(ForwardCacheHandle cache, int* lengths, UIntPtr sampleCount, long* indices, UIntPtr n);

        // Losses and backpropagation
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_preallocate_grads(ModelHandle model, long maxBatch, out BackwardCacheHandle cache);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void snn_backward_cache_destroy(IntPtr cache);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_targets(BackwardCacheHandle cache, float* targets, UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_labels(BackwardCacheHandle cache, int* labels, UIntPtr n);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_labels_gather(BackwardCacheHandle cache, int* labels, UIntPtr sampleCount, long* indices, UIntPtr n);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_input_gradient(BackwardCacheHandle cache, int enabled);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_loss_parameter(BackwardCacheHandle cache, int loss, double value);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_get_loss_parameter(BackwardCacheHandle cache, int loss, out double value);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_backprop(BackwardCacheHandle bwd, ForwardCacheHandle fwd, ModelHandle model, int loss, out float lossValue);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_backprop_with_output_gradient(BackwardCacheHandle bwd, ForwardCacheHandle fwd, ModelHandle model, float* outputGradient, UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_gradients(BackwardCacheHandle cache, out IntPtr data, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_get_gradients(BackwardCacheHandle cache, float* dst, UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_gradients(BackwardCacheHandle cache, float* src, UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_get_input_gradients(BackwardCacheHandle cache, float* dst, UIntPtr count);

        // Optimisers
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_optimiser_create(ModelHandle model, int kind, out OptimiserHandle optimiser);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void snn_optimiser_destroy(IntPtr optimiser);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_optimiser_set(OptimiserHandle optimiser, int which, double value);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_optimiser_get(OptimiserHandle optimiser, int which, out double value);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_optimiser_step(OptimiserHandle optimiser, ModelHandle model, BackwardCacheHandle grads);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_optimiser_reset(OptimiserHandle optimiser);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_optimiser_step_count(OptimiserHandle optimiser, out long steps);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_optimiser_grad_norm(OptimiserHandle optimiser, out double norm);

        // Mixed precision
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_cache_set_precision(ForwardCacheHandle cache, int precision);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_cache_precision(ForwardCacheHandle cache, out int precision);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_precision_support(int device, int precision, out int native);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_loss_scaling(BackwardCacheHandle cache, int on);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_loss_scaling_state(BackwardCacheHandle cache, double scale, double growthFactor, double backoffFactor, long growthInterval, long goodSteps);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_loss_scaling_state(BackwardCacheHandle cache, out int on, out double scale, out double growthFactor, out double backoffFactor, out long growthInterval, out long goodSteps, out int skipped);

        // Model files and checkpoints
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_save(ModelHandle model, [In] byte[] path);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_load([In] byte[] path, out ModelHandle model);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_save_to_buffer(ModelHandle model, [Out] byte[] buf, UIntPtr capacity, out UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_load_from_buffer([In] byte[] data, UIntPtr size, out ModelHandle model);

        // ONNX
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_export_onnx(ModelHandle model, ref OnnxExportOptionsNative options, [In] byte[] path);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_export_onnx_to_buffer(ModelHandle model, ref OnnxExportOptionsNative options, [Out] byte[] buf, UIntPtr capacity, out UIntPtr size);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_import_onnx([In] byte[] path, ref OnnxImportOptionsNative options, out ModelHandle model);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_import_onnx_from_buffer([In] byte[] data, UIntPtr size, ref OnnxImportOptionsNative options, out ModelHandle model);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_checkpoint_save(ModelHandle model, OptimiserHandle optimiser, [In] byte[] path);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_checkpoint_load([In] byte[] path, out ModelHandle model, out OptimiserHandle optimiser);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_checkpoint_save_v2(ModelHandle model, OptimiserHandle optimiser, BackwardCacheHandle cache, [In] byte[] path);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_checkpoint_load_loss_scaling([In] byte[] path, BackwardCacheHandle cache);

        // Devices
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_gpu_count();
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_gpu_status(int device);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_to_gpu(ModelHandle model, int device);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_to_cpu(ModelHandle model);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_to_best_device(ModelHandle model, out int device);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_model_device(ModelHandle model, out int device);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_allow_tf32(int on);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_inputs_device(ForwardCacheHandle cache, IntPtr deviceInputs, UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_dataset_create(int device, float* samples, UIntPtr sampleCount, UIntPtr features, int* labels, out DatasetHandle dataset);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void snn_dataset_destroy(IntPtr dataset);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_inputs_from_dataset(ForwardCacheHandle cache, DatasetHandle dataset, long* indices, UIntPtr n);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_set_labels_from_dataset(BackwardCacheHandle cache, DatasetHandle dataset, long* indices, UIntPtr n);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_dataset_create_tokens(int device, int* tokens, UIntPtr sampleCount, UIntPtr steps, int* lengths, int* labels, UIntPtr labelsPerSample, out DatasetHandle dataset);

        // Native GPU interoperation
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_gradients_device(BackwardCacheHandle cache, out IntPtr data, out UIntPtr count);
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int snn_backward_cache_synchronize(BackwardCacheHandle cache);
    }
}
