// Safe C# binding of snn, an embeddable engine for training and running small
// neural networks on the CPU and on NVIDIA GPUs.
//
// Every wrapper is IDisposable. Dispose (or a using block) frees the native
// memory at once, GPU memory included; a finalizer frees it too, but only when
// the garbage collector gets round to it, which does not see GPU memory, so
// dispose models, caches, optimisers and data sets that live on a GPU.
//
// A cache or optimiser holds a reference on its model's native handle: the
// model's memory is freed when the model and everything made from it are
// disposed (or finalized), in any order. Any call on a disposed object throws
// ObjectDisposedException; a cache or optimiser whose model was disposed keeps
// answering the calls that take only itself, while those that need the model
// (Forward, Backprop, Step) throw ObjectDisposedException.
//
// Buffers are spans: a float[] converts to Span<float> / ReadOnlySpan<float>
// implicitly, and so do slices of arrays and memory from stackalloc or native
// code. A span is pinned for the call, never copied by the binding.
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

[assembly: InternalsVisibleTo("Snn.Tests")]

namespace Snn
{
    /// <summary>The status codes of snn.h.</summary>
    public enum Status
    {
        Ok = 0, NullArgument = 1, InvalidArgument = 2, Spec = 3, Shape = 4, Count = 5, Batch = 6,
        Label = 7, ModelMismatch = 8, DeviceMismatch = 9, State = 10, OutOfMemory = 11,
        NotFinite = 12, Io = 13, FileFormat = 14, Unsupported = 15, GpuPluginNotFound = 16,
        GpuDriver = 17, NoGpu = 18, GpuIndex = 19, Cuda = 20, Internal = 21
    }

    public enum Loss { Mse = 1, LogitCrossEntropy = 2 }

    public enum OptimiserKind { Sgd = 1, Adam = 2, AdamW = 3, RmsProp = 4 }

    public enum Hyperparameter
    {
        LearningRate = 1, Momentum = 2, Nesterov = 3, Beta1 = 4, Beta2 = 5, Epsilon = 6,
        WeightDecay = 7, Alpha = 8
    }

    public enum LogLevel { Error = 0, Warning = 1, Info = 2 }

    /// <summary>A failed snn call: its status and the library's message. When the
    /// log receiver threw on that message, InnerException is what it threw.</summary>
    public class SnnException : Exception
    {
        public Status Status { get; private set; }

        public SnnException(Status status, string message) : this(status, message, null) { }

        public SnnException(Status status, string message, Exception inner) : base(message, inner)
        {
            Status = status;
        }
    }

    /// <summary>Where one layer's parameters lie in the flat parameter vector.</summary>
    public struct LayerParams
    {
        public long WeightOffset, WeightCount, BiasOffset, BiasCount;
    }

    /// <summary>Where one layer's state (batchnorm's running_mean, running_var,
    /// num_batches_tracked) lies in the flat state vector.</summary>
    public struct LayerState
    {
        public long Offset, Count;
    }

    /// <summary>Library-wide functions and settings.</summary>
    public static class Library
    {
        public const int CpuDevice = -1;
        const int BindingMajor = 0;
        static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);
        static volatile bool versionChecked;
        // One delegate for the whole process, never collected: the library may
        // still call the pointer it was given while another thread replaces the
        // receiver, so the pointer must stay valid for good.
        static readonly LogCallback logTrampoline = Log;
        static volatile Action<LogLevel, string> logReceiver;
        // What the receiver threw on an error message of this thread's current
        // call, for Check to attach to that call's SnnException.
        [ThreadStatic] static Exception receiverExceptionOfThisCall;
        // What it threw on any other message, for TakeLogCallbackException.
        static Exception recordedReceiverException;

        /// <summary>A NUL-terminated UTF-8 string from the library (null gives "").</summary>
        internal static string Utf8(IntPtr p)
        {
            if (p == IntPtr.Zero) return "";
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) n++;
            var bytes = new byte[n];
            Marshal.Copy(p, bytes, 0, n);
            return Encoding.UTF8.GetString(bytes);
        }

        /// <summary>A string for the library: UTF-8 bytes and a terminating NUL.
        /// A NUL inside would end the string there for the library, silently
        /// cutting a spec or a path, so it is an ArgumentException; so is a
        /// string that is not valid UTF-16 (a lone surrogate).</summary>
        internal static byte[] Utf8z(string s, string parameter)
        {
            if (s == null) throw new ArgumentNullException(parameter);
            int nul = s.IndexOf('\0');
            if (nul >= 0)
                throw new ArgumentException("contains a NUL character at index " + nul +
                    "; snn would read the string only up to it", parameter);
            try
            {
                var bytes = new byte[StrictUtf8.GetByteCount(s) + 1];
                StrictUtf8.GetBytes(s, 0, s.Length, bytes, 0);
                return bytes;
            }
            catch (EncoderFallbackException e)
            {
                throw new ArgumentException("is not valid UTF-16: " + e.Message, parameter, e);
            }
        }

        /// <summary>Throws an SnnException for a failed status, with the message
        /// read right after the call, before anything else can replace it, and
        /// what the log receiver threw on that message as InnerException.</summary>
        internal static void Check(int status)
        {
            var thrown = receiverExceptionOfThisCall;
            receiverExceptionOfThisCall = null;
            if (status != 0)
                throw new SnnException((Status)status, Utf8(NativeMethods.snn_last_error()), thrown);
            if (thrown != null) Interlocked.Exchange(ref recordedReceiverException, thrown);
        }

        /// <summary>After a call whose status is not checked (a destroy, a
        /// status query): what the receiver threw during it is recorded for
        /// TakeLogCallbackException.</summary>
        internal static void SettleLogReceiverException()
        {
            var thrown = receiverExceptionOfThisCall;
            receiverExceptionOfThisCall = null;
            if (thrown != null) Interlocked.Exchange(ref recordedReceiverException, thrown);
        }

        internal static UIntPtr Size(long n)
        {
            if (n < 0) throw new ArgumentOutOfRangeException("n", n, "a size cannot be negative");
            return new UIntPtr((ulong)n);
        }

        internal static long Long(UIntPtr n) { return checked((long)n.ToUInt64()); }

        /// <summary>A span's length for a native view; a view of more than
        /// int.MaxValue floats cannot be a span (copy it in parts instead).</summary>
        internal static int SpanLength(UIntPtr n)
        {
            ulong v = n.ToUInt64();
            if (v > int.MaxValue)
                throw new InvalidOperationException(v + " elements do not fit in a span; copy them instead");
            return (int)v;
        }

        internal static ObjectDisposedException Disposed(string type, string message)
        {
            return new ObjectDisposedException(type, message);
        }

        /// <summary>Checks once that the loaded library's major version is this binding's.</summary>
        public static void CheckVersion()
        {
            if (versionChecked) return;
            int loaded = NativeMethods.snn_version_number();
            if (loaded / 1000000 != BindingMajor)
                throw new SnnException(Status.Unsupported, "libsnn " + VersionString +
                    " is loaded but this binding needs major version " + BindingMajor);
            versionChecked = true;
        }

        public static int VersionNumber { get { return NativeMethods.snn_version_number(); } }
        public static string VersionString { get { return Utf8(NativeMethods.snn_version_string()); } }
        /// <summary>The features of this build separated by spaces, e.g. "cpu openblas cuda-plugin".</summary>
        public static string BuildFeatures { get { return Utf8(NativeMethods.snn_build_features()); } }
        public static bool HasFeature(string feature)
        {
            return NativeMethods.snn_has_feature(Utf8z(feature, "feature")) != 0;
        }
        public static string StatusString(Status status) { return Utf8(NativeMethods.snn_status_string((int)status)); }

        /// <summary>The bound on the CPU threads the library uses (OpenBLAS included).</summary>
        public static int NumThreads
        {
            get { return NativeMethods.snn_get_num_threads(); }
            set { Check(NativeMethods.snn_set_num_threads(value)); }
        }

        /// <summary>With on, backprops and optimiser steps refuse NaN or Inf
        /// (Status.NotFinite) instead of poisoning the model.</summary>
        public static void SetCheckFinite(bool on) { Check(NativeMethods.snn_set_check_finite(on ? 1 : 0)); }

        /// <summary>Lets GPU caches created afterwards use TF32 tensor-core math.</summary>
        public static void SetAllowTf32(bool on) { Check(NativeMethods.snn_set_allow_tf32(on ? 1 : 0)); }

        /// <summary>Installs (or with null removes) the log receiver: every failed
        /// call's message (LogLevel.Error) and the library's notes. It runs on the
        /// thread of the call that logs and must not call into snn (except
        /// SetLogCallback). An exception it throws never reaches the library
        /// (unwinding through native frames would crash the runtime); it is
        /// caught in the binding and surfaces instead:
        ///  - thrown on the message of a failing call, it becomes the
        ///    InnerException of that call's SnnException, thrown on the caller's
        ///    thread as usual;
        ///  - thrown on any other message (a warning, possibly logged by a
        ///    finalizer), it is recorded: TakeLogCallbackException returns it.
        /// The receiver stays installed either way.</summary>
        public static void SetLogCallback(Action<LogLevel, string> receiver)
        {
            if (receiver == null)
            {
                Check(NativeMethods.snn_set_log_callback(null, IntPtr.Zero));
                logReceiver = null;
                return;
            }
            logReceiver = receiver;
            Check(NativeMethods.snn_set_log_callback(logTrampoline, IntPtr.Zero));
        }

        /// <summary>The last exception the log receiver threw on a message that
        /// was not a failing call's, or null; taking it clears it.</summary>
        public static Exception TakeLogCallbackException()
        {
            return Interlocked.Exchange(ref recordedReceiverException, null);
        }

        static void Log(IntPtr userData, int level, IntPtr message)
        {
            try
            {
                var receiver = logReceiver;
                if (receiver != null) receiver((LogLevel)level, Utf8(message));
            }
            catch (Exception e)
            {
                if (level == (int)LogLevel.Error)
                    receiverExceptionOfThisCall = e;
                else
                    Interlocked.Exchange(ref recordedReceiverException, e);
            }
        }

        /// <summary>The number of GPUs snn can use; 0 without the CUDA plugin,
        /// a driver or a device (GpuStatus says which).</summary>
        public static int GpuCount { get { return NativeMethods.snn_gpu_count(); } }

        /// <summary>Status.Ok when GPU `device` can be used, otherwise the reason
        /// (GpuPluginNotFound, GpuDriver, NoGpu, GpuIndex).</summary>
        public static Status GpuStatus(int device)
        {
            int status = NativeMethods.snn_gpu_status(device);
            SettleLogReceiverException();
            return (Status)status;
        }

        /// <summary>Throws an SnnException with the reason when GPU `device` cannot be used.</summary>
        public static void RequireGpu(int device) { Check(NativeMethods.snn_gpu_status(device)); }
    }

    /// <summary>A network: its graph of layers, its flat parameter vector and its
    /// flat state vector (batchnorm's running statistics).</summary>
    public sealed class Model : IDisposable
    {
        internal readonly ModelHandle Handle;
        volatile bool disposed;

        Model(ModelHandle handle) { Handle = handle; }

        /// <summary>Parses a spec such as "input 1; dense 10 tanh; dense 1" (see
        /// snn.h for every layer). A NUL in the spec is an ArgumentException.</summary>
        public Model(string spec)
        {
            var text = Library.Utf8z(spec, "spec");
            Library.CheckVersion();
            ModelHandle h;
            Library.Check(NativeMethods.snn_model_create(text, out h));
            Handle = h;
        }

        /// <summary>Loads a model file (safetensors) onto the CPU.</summary>
        public static Model Load(string path)
        {
            var p = Library.Utf8z(path, "path");
            Library.CheckVersion();
            ModelHandle h;
            Library.Check(NativeMethods.snn_model_load(p, out h));
            return new Model(h);
        }

        /// <summary>Loads a model from the bytes of a model file.</summary>
        public static Model FromBytes(byte[] bytes)
        {
            if (bytes == null) throw new ArgumentNullException("bytes");
            Library.CheckVersion();
            ModelHandle h;
            Library.Check(NativeMethods.snn_model_load_from_buffer(bytes, Library.Size(bytes.Length), out h));
            return new Model(h);
        }

        /// <summary>Loads a checkpoint as a CPU model and its optimiser, from which
        /// training continues bit-identically.</summary>
        public static Model LoadCheckpoint(string path, out Optimiser optimiser)
        {
            var p = Library.Utf8z(path, "path");
            Library.CheckVersion();
            ModelHandle m;
            OptimiserHandle o;
            Library.Check(NativeMethods.snn_checkpoint_load(p, out m, out o));
            o.Own(m);
            var model = new Model(m);
            optimiser = new Optimiser(model, o);
            return model;
        }

        /// <summary>Saves the model atomically (a temporary file renamed over path).</summary>
        public void Save(string path)
        {
            var p = Library.Utf8z(path, "path");
            Library.Check(NativeMethods.snn_model_save(Live, p));
        }

        /// <summary>Saves the model and the optimiser's state atomically.</summary>
        public void SaveCheckpoint(Optimiser optimiser, string path)
        {
            var p = Library.Utf8z(path, "path");
            Library.Check(NativeMethods.snn_checkpoint_save(Live, optimiser.Live, p));
        }

        /// <summary>The bytes of the model file, in memory.</summary>
        public byte[] ToBytes()
        {
            UIntPtr size;
            Library.Check(NativeMethods.snn_model_save_to_buffer(Live, null, UIntPtr.Zero, out size));
            var bytes = new byte[Library.Long(size)];
            Library.Check(NativeMethods.snn_model_save_to_buffer(Live, bytes, size, out size));
            return bytes;
        }

        /// <summary>The canonical spec, which the constructor parses back into the same model.</summary>
        public string Describe()
        {
            UIntPtr length;
            Library.Check(NativeMethods.snn_model_describe(Live, null, UIntPtr.Zero, out length));
            var buf = new byte[Library.Long(length) + 1];
            Library.Check(NativeMethods.snn_model_describe(Live, buf, Library.Size(buf.Length), out length));
            return Encoding.UTF8.GetString(buf, 0, (int)Library.Long(length));
        }

        /// <summary>The number of layers, the input layer (layer 0) included.</summary>
        public long LayerCount
        {
            get { long n; Library.Check(NativeMethods.snn_model_layer_count(Live, out n)); return n; }
        }

        /// <summary>The output shape of a layer as (channels, height, width).</summary>
        public long[] LayerShape(long layer)
        {
            long c, h, w;
            Library.Check(NativeMethods.snn_model_layer_shape(Live, layer, out c, out h, out w));
            return new[] { c, h, w };
        }

        public LayerParams LayerParams(long layer)
        {
            UIntPtr wo, wc, bo, bc;
            Library.Check(NativeMethods.snn_model_layer_params(Live, layer, out wo, out wc, out bo, out bc));
            return new LayerParams {
                WeightOffset = Library.Long(wo), WeightCount = Library.Long(wc),
                BiasOffset = Library.Long(bo), BiasCount = Library.Long(bc) };
        }

        public LayerState LayerState(long layer)
        {
            UIntPtr offset, count;
            Library.Check(NativeMethods.snn_model_layer_state(Live, layer, out offset, out count));
            return new LayerState { Offset = Library.Long(offset), Count = Library.Long(count) };
        }

        /// <summary>Input features per sample (C*H*W for images).</summary>
        public long InputSize
        {
            get { UIntPtr n; Library.Check(NativeMethods.snn_model_input_size(Live, out n)); return Library.Long(n); }
        }

        public long OutputSize
        {
            get { UIntPtr n; Library.Check(NativeMethods.snn_model_output_size(Live, out n)); return Library.Long(n); }
        }

        public long ParameterCount
        {
            get { UIntPtr n; Library.Check(NativeMethods.snn_parameter_count(Live, out n)); return Library.Long(n); }
        }

        /// <summary>The number of state values (0 for a model without batchnorm).</summary>
        public long StateCount
        {
            get { UIntPtr n; Library.Check(NativeMethods.snn_state_count(Live, out n)); return Library.Long(n); }
        }

        /// <summary>Re-initialises every parameter from seed (the same on every platform).</summary>
        public void Init(ulong seed) { Library.Check(NativeMethods.snn_model_init(Live, seed)); }

        /// <summary>A writable view of a CPU model's parameters, without a copy.
        /// It is valid until the model is disposed or moved to a GPU; reading it
        /// after that reads freed memory, so keep it in a local and do not
        /// hold it across those calls. On a GPU: Status.DeviceMismatch.</summary>
        public unsafe Span<float> ParametersView()
        {
            IntPtr data;
            UIntPtr n;
            Library.Check(NativeMethods.snn_parameters(Live, out data, out n));
            return new Span<float>((void*)data, Library.SpanLength(n));
        }

        /// <summary>The parameters (any device), copied into a new array.</summary>
        public float[] GetParameters()
        {
            var dst = new float[ParameterCount];
            GetParameters(dst);
            return dst;
        }

        /// <summary>Copies the parameters into dst, whose length must be ParameterCount.</summary>
        public unsafe void GetParameters(Span<float> dst)
        {
            fixed (float* p = &MemoryMarshal.GetReference(dst))
                Library.Check(NativeMethods.snn_get_parameters(Live, p, Library.Size(dst.Length)));
        }

        public unsafe void SetParameters(ReadOnlySpan<float> src)
        {
            fixed (float* p = &MemoryMarshal.GetReference(src))
                Library.Check(NativeMethods.snn_set_parameters(Live, p, Library.Size(src.Length)));
        }

        /// <summary>The state (batchnorm's running statistics), copied into a new array.</summary>
        public float[] GetState()
        {
            var dst = new float[StateCount];
            GetState(dst);
            return dst;
        }

        public unsafe void GetState(Span<float> dst)
        {
            fixed (float* p = &MemoryMarshal.GetReference(dst))
                Library.Check(NativeMethods.snn_get_state(Live, p, Library.Size(dst.Length)));
        }

        public unsafe void SetState(ReadOnlySpan<float> src)
        {
            fixed (float* p = &MemoryMarshal.GetReference(src))
                Library.Check(NativeMethods.snn_set_state(Live, p, Library.Size(src.Length)));
        }

        /// <summary>Library.CpuDevice or the GPU index the model lives on.</summary>
        public int Device
        {
            get { int d; Library.Check(NativeMethods.snn_model_device(Live, out d)); return d; }
        }

        /// <summary>Moves the model to GPU `device`; its caches and optimisers
        /// follow on their next use with it. Without a usable GPU this throws an
        /// SnnException whose Status says why, and the model stays where it was.</summary>
        public void ToGpu(int device) { Library.Check(NativeMethods.snn_to_gpu(Live, device)); }
        public void ToCpu() { Library.Check(NativeMethods.snn_to_cpu(Live)); }

        /// <summary>Moves the model to GPU 0 when one can be used; returns where it is.</summary>
        public int ToBestDevice()
        {
            int d;
            Library.Check(NativeMethods.snn_to_best_device(Live, out d));
            return d;
        }

        public ForwardCache Preallocate(long maxBatch) { return new ForwardCache(this, maxBatch); }
        public BackwardCache PreallocateGrads(long maxBatch) { return new BackwardCache(this, maxBatch); }
        public Optimiser CreateOptimiser(OptimiserKind kind) { return new Optimiser(this, kind); }

        /// <summary>Disposes the model: every later call on it throws
        /// ObjectDisposedException. Its native memory (GPU memory included) is
        /// freed now, or when the last cache or optimiser made from it is disposed.</summary>
        public void Dispose()
        {
            disposed = true;
            Handle.Dispose();
        }

        public bool IsDisposed { get { return disposed; } }

        /// <summary>The handle, or ObjectDisposedException for a disposed model.</summary>
        internal ModelHandle Live
        {
            get
            {
                if (disposed)
                    throw Library.Disposed("Snn.Model",
                        "the model was disposed; its caches and optimisers answer only the calls that do not need it");
                return Handle;
            }
        }
    }

    /// <summary>The buffers of forward passes of one model, for batches up to
    /// MaxBatch. A cache starts in training mode (batchnorm uses the batch's
    /// statistics and updates the model's state, dropout drops); set Training to
    /// false for inference.</summary>
    public sealed class ForwardCache : IDisposable
    {
        internal readonly ForwardCacheHandle Handle;
        readonly long inputSize, outputSize;
        volatile bool disposed;

        /// <summary>The model the cache was made for.</summary>
        public Model Model { get; private set; }

        internal ForwardCache(Model model, long maxBatch)
        {
            var m = model.Live;
            Model = model;
            inputSize = model.InputSize;
            outputSize = model.OutputSize;
            ForwardCacheHandle h;
            Library.Check(NativeMethods.snn_preallocate(m, maxBatch, out h));
            h.Own(m);
            Handle = h;
        }

        internal ForwardCacheHandle Live
        {
            get
            {
                if (disposed) throw Library.Disposed("Snn.ForwardCache", "the forward cache was disposed");
                return Handle;
            }
        }

        /// <summary>The batch size of the next SetInputs and Forward, 1..MaxBatch.</summary>
        public long Batch
        {
            get { long b, m; Library.Check(NativeMethods.snn_cache_batch(Live, out b, out m)); return b; }
            set { Library.Check(NativeMethods.snn_cache_set_batch(Live, value)); }
        }

        public long MaxBatch
        {
            get { long b, m; Library.Check(NativeMethods.snn_cache_batch(Live, out b, out m)); return m; }
        }

        /// <summary>Training mode (true, the default) or inference mode (false):
        /// in inference, batchnorm uses the running statistics, dropout passes its
        /// input through and a forward pass only reads the model.</summary>
        public bool Training
        {
            get { int on; Library.Check(NativeMethods.snn_cache_training(Live, out on)); return on != 0; }
            set { Library.Check(NativeMethods.snn_cache_set_training(Live, value ? 1 : 0)); }
        }

        /// <summary>Seeds the dropout masks of the training passes that follow
        /// (they depend only on the seed and the number of passes since).</summary>
        public void SetSeed(ulong seed) { Library.Check(NativeMethods.snn_cache_set_seed(Live, seed)); }

        /// <summary>Copies Batch * InputSize inputs, [batch][features].</summary>
        public unsafe void SetInputs(ReadOnlySpan<float> inputs)
        {
            fixed (float* p = &MemoryMarshal.GetReference(inputs))
                Library.Check(NativeMethods.snn_set_inputs(Live, p, Library.Size(inputs.Length)));
        }

        /// <summary>Gathers whole samples of data by index; the batch becomes
        /// indices.Length. data must hold whole samples.</summary>
        public unsafe void SetInputsGather(ReadOnlySpan<float> data, ReadOnlySpan<long> indices)
        {
            if (inputSize == 0 || data.Length % inputSize != 0)
                throw new SnnException(Status.Count, "SetInputsGather: " + data.Length +
                    " floats are not a whole number of samples of " + inputSize);
            fixed (float* d = &MemoryMarshal.GetReference(data))
            fixed (long* i = &MemoryMarshal.GetReference(indices))
                Library.Check(NativeMethods.snn_set_inputs_gather(Live, d, Library.Size(data.Length / inputSize),
                                                                  i, Library.Size(indices.Length)));
        }

        /// <summary>Gathers samples of a data set on the cache's device by index.</summary>
        public unsafe void SetInputsFromDataset(Dataset dataset, ReadOnlySpan<long> indices)
        {
            var cache = Live;
            var data = dataset.Live;
            fixed (long* i = &MemoryMarshal.GetReference(indices))
                Library.Check(NativeMethods.snn_set_inputs_from_dataset(cache, data, i, Library.Size(indices.Length)));
        }

        /// <summary>GPU interop: copies count floats that already live in memory of
        /// the cache's GPU (a device pointer from CUDA code), device to device.
        /// A CPU cache gives Status.DeviceMismatch.</summary>
        public void SetInputsDevice(IntPtr deviceInputs, long count)
        {
            Library.Check(NativeMethods.snn_set_inputs_device(Live, deviceInputs, Library.Size(count)));
        }

        /// <summary>Runs the model on the cache's inputs (ObjectDisposedException
        /// when the model was disposed).</summary>
        public void Forward()
        {
            var cache = Live;
            Library.Check(NativeMethods.snn_forward(cache, Model.Live));
        }

        /// <summary>A read-only view of a CPU cache's outputs, [batch][outputs],
        /// without a copy. It is valid until the next Forward or the cache's
        /// disposal; do not hold it across those calls. On a GPU:
        /// Status.DeviceMismatch (use GetOutputs).</summary>
        public unsafe ReadOnlySpan<float> OutputsView()
        {
            IntPtr data;
            UIntPtr n;
            Library.Check(NativeMethods.snn_outputs(Live, out data, out n));
            return new ReadOnlySpan<float>((void*)data, Library.SpanLength(n));
        }

        /// <summary>The outputs, [batch][outputs], copied into a new array (any device).</summary>
        public float[] GetOutputs()
        {
            var dst = new float[Batch * outputSize];
            GetOutputs(dst);
            return dst;
        }

        public unsafe void GetOutputs(Span<float> dst)
        {
            fixed (float* p = &MemoryMarshal.GetReference(dst))
                Library.Check(NativeMethods.snn_get_outputs(Live, p, Library.Size(dst.Length)));
        }

        public void Dispose()
        {
            disposed = true;
            Handle.Dispose();
        }

        public bool IsDisposed { get { return disposed; } }
    }

    /// <summary>The gradient buffers of one model, for batches up to a maximum.</summary>
    public sealed class BackwardCache : IDisposable
    {
        internal readonly BackwardCacheHandle Handle;
        readonly long parameterCount;
        volatile bool disposed;

        /// <summary>The model the cache was made for.</summary>
        public Model Model { get; private set; }

        internal BackwardCache(Model model, long maxBatch)
        {
            var m = model.Live;
            Model = model;
            parameterCount = model.ParameterCount;
            BackwardCacheHandle h;
            Library.Check(NativeMethods.snn_preallocate_grads(m, maxBatch, out h));
            h.Own(m);
            Handle = h;
        }

        internal BackwardCacheHandle Live
        {
            get
            {
                if (disposed) throw Library.Disposed("Snn.BackwardCache", "the backward cache was disposed");
                return Handle;
            }
        }

        /// <summary>Targets for Loss.Mse, [batch][outputs].</summary>
        public unsafe void SetTargets(ReadOnlySpan<float> targets)
        {
            fixed (float* p = &MemoryMarshal.GetReference(targets))
                Library.Check(NativeMethods.snn_set_targets(Live, p, Library.Size(targets.Length)));
        }

        /// <summary>0-based class labels for Loss.LogitCrossEntropy, one per sample.</summary>
        public unsafe void SetLabels(ReadOnlySpan<int> labels)
        {
            fixed (int* p = &MemoryMarshal.GetReference(labels))
                Library.Check(NativeMethods.snn_set_labels(Live, p, Library.Size(labels.Length)));
        }

        /// <summary>Label i becomes labels[indices[i]].</summary>
        public unsafe void SetLabelsGather(ReadOnlySpan<int> labels, ReadOnlySpan<long> indices)
        {
            fixed (int* l = &MemoryMarshal.GetReference(labels))
            fixed (long* i = &MemoryMarshal.GetReference(indices))
                Library.Check(NativeMethods.snn_set_labels_gather(Live, l, Library.Size(labels.Length), i,
                                                                  Library.Size(indices.Length)));
        }

        public unsafe void SetLabelsFromDataset(Dataset dataset, ReadOnlySpan<long> indices)
        {
            var cache = Live;
            var data = dataset.Live;
            fixed (long* i = &MemoryMarshal.GetReference(indices))
                Library.Check(NativeMethods.snn_set_labels_from_dataset(cache, data, i, Library.Size(indices.Length)));
        }

        /// <summary>With enabled, backprops also compute the gradient with respect to the inputs.</summary>
        public void SetInputGradient(bool enabled)
        {
            Library.Check(NativeMethods.snn_set_input_gradient(Live, enabled ? 1 : 0));
        }

        /// <summary>The loss of fwd's last forward pass and its gradient with
        /// respect to every parameter; returns the loss.</summary>
        public float Backprop(ForwardCache fwd, Loss loss)
        {
            var bwd = Live;
            var f = fwd.Live;
            float value;
            Library.Check(NativeMethods.snn_backprop(bwd, f, Model.Live, (int)loss, out value));
            return value;
        }

        /// <summary>Backpropagates a caller-supplied gradient of the loss with
        /// respect to the outputs, [batch][outputs] (custom losses, RL).</summary>
        public unsafe void BackpropWithOutputGradient(ForwardCache fwd, ReadOnlySpan<float> outputGradient)
        {
            var bwd = Live;
            var f = fwd.Live;
            var m = Model.Live;
            fixed (float* p = &MemoryMarshal.GetReference(outputGradient))
                Library.Check(NativeMethods.snn_backprop_with_output_gradient(bwd, f, m, p,
                                                                              Library.Size(outputGradient.Length)));
        }

        /// <summary>A read-only view of a CPU cache's gradient, without a copy; valid
        /// until the cache is disposed. On a GPU: Status.DeviceMismatch.</summary>
        public unsafe ReadOnlySpan<float> GradientsView()
        {
            IntPtr data;
            UIntPtr n;
            Library.Check(NativeMethods.snn_gradients(Live, out data, out n));
            return new ReadOnlySpan<float>((void*)data, Library.SpanLength(n));
        }

        /// <summary>The gradient (any device), copied into a new array.</summary>
        public float[] GetGradients()
        {
            var dst = new float[parameterCount];
            GetGradients(dst);
            return dst;
        }

        public unsafe void GetGradients(Span<float> dst)
        {
            fixed (float* p = &MemoryMarshal.GetReference(dst))
                Library.Check(NativeMethods.snn_get_gradients(Live, p, Library.Size(dst.Length)));
        }

        /// <summary>Overwrites the gradient (e.g. with an average over workers) before an optimiser step.</summary>
        public unsafe void SetGradients(ReadOnlySpan<float> src)
        {
            fixed (float* p = &MemoryMarshal.GetReference(src))
                Library.Check(NativeMethods.snn_set_gradients(Live, p, Library.Size(src.Length)));
        }

        /// <summary>The gradient with respect to the inputs, [batch][features], of
        /// the last backprop (needs SetInputGradient(true) before it).</summary>
        public unsafe void GetInputGradients(Span<float> dst)
        {
            fixed (float* p = &MemoryMarshal.GetReference(dst))
                Library.Check(NativeMethods.snn_get_input_gradients(Live, p, Library.Size(dst.Length)));
        }

        /// <summary>GPU interop: the device pointer of a GPU cache's gradient
        /// (count = ParameterCount floats) for native CUDA code such as an NCCL
        /// all-reduce; valid until the cache is disposed. Call Synchronize before
        /// reading or writing it. A CPU cache gives Status.DeviceMismatch (use
        /// GradientsView).</summary>
        public IntPtr GradientsDevice(out long count)
        {
            IntPtr data;
            UIntPtr n;
            Library.Check(NativeMethods.snn_gradients_device(Live, out data, out n));
            count = Library.Long(n);
            return data;
        }

        /// <summary>Waits until the work queued on the cache has finished (at once on the CPU).</summary>
        public void Synchronize() { Library.Check(NativeMethods.snn_backward_cache_synchronize(Live)); }

        public void Dispose()
        {
            disposed = true;
            Handle.Dispose();
        }

        public bool IsDisposed { get { return disposed; } }
    }

    /// <summary>An optimiser's state (moments, step count) for one model.</summary>
    public sealed class Optimiser : IDisposable
    {
        internal readonly OptimiserHandle Handle;
        volatile bool disposed;

        /// <summary>The model the optimiser was made for (or loaded with).</summary>
        public Model Model { get; private set; }

        internal Optimiser(Model model, OptimiserHandle handle)
        {
            Model = model;
            Handle = handle;
        }

        internal Optimiser(Model model, OptimiserKind kind)
        {
            var m = model.Live;
            Model = model;
            OptimiserHandle h;
            Library.Check(NativeMethods.snn_optimiser_create(m, (int)kind, out h));
            h.Own(m);
            Handle = h;
        }

        internal OptimiserHandle Live
        {
            get
            {
                if (disposed) throw Library.Disposed("Snn.Optimiser", "the optimiser was disposed");
                return Handle;
            }
        }

        public void Set(Hyperparameter which, double value)
        {
            Library.Check(NativeMethods.snn_optimiser_set(Live, (int)which, value));
        }

        public double Get(Hyperparameter which)
        {
            double v;
            Library.Check(NativeMethods.snn_optimiser_get(Live, (int)which, out v));
            return v;
        }

        /// <summary>Updates model's parameters from the gradient in grads.</summary>
        public void Step(Model model, BackwardCache grads)
        {
            var o = Live;
            var m = model.Live;
            Library.Check(NativeMethods.snn_optimiser_step(o, m, grads.Live));
        }

        /// <summary>Zeroes the moments and the step count.</summary>
        public void Reset() { Library.Check(NativeMethods.snn_optimiser_reset(Live)); }

        public long StepCount
        {
            get { long n; Library.Check(NativeMethods.snn_optimiser_step_count(Live, out n)); return n; }
        }

        public void Dispose()
        {
            disposed = true;
            Handle.Dispose();
        }

        public bool IsDisposed { get { return disposed; } }
    }

    /// <summary>A data set copied once to a device (Library.CpuDevice or a GPU),
    /// from which batches are gathered by index.</summary>
    public sealed class Dataset : IDisposable
    {
        internal readonly DatasetHandle Handle;
        volatile bool disposed;

        public long SampleCount { get; private set; }
        public long Features { get; private set; }
        public int Device { get; private set; }

        /// <summary>samples holds whole samples of `features` floats; labels is
        /// empty (or null) or holds one 0-based label per sample.</summary>
        public unsafe Dataset(int device, ReadOnlySpan<float> samples, long features, ReadOnlySpan<int> labels)
        {
            if (features < 1) throw new ArgumentOutOfRangeException("features", features, "must be at least 1");
            if (samples.Length % features != 0)
                throw new SnnException(Status.Count, "Dataset: " + samples.Length +
                    " floats are not a whole number of samples of " + features);
            long count = samples.Length / features;
            if (!labels.IsEmpty && labels.Length != count)
                throw new SnnException(Status.Count, "Dataset: " + labels.Length + " labels for " + count + " samples");
            Library.CheckVersion();
            DatasetHandle h;
            fixed (float* s = &MemoryMarshal.GetReference(samples))
            fixed (int* l = &MemoryMarshal.GetReference(labels))
                Library.Check(NativeMethods.snn_dataset_create(device, s, Library.Size(count), Library.Size(features),
                                                               labels.IsEmpty ? null : l, out h));
            Handle = h;
            SampleCount = count;
            Features = features;
            Device = device;
        }

        internal DatasetHandle Live
        {
            get
            {
                if (disposed) throw Library.Disposed("Snn.Dataset", "the data set was disposed");
                return Handle;
            }
        }

        public void Dispose()
        {
            disposed = true;
            Handle.Dispose();
        }

        public bool IsDisposed { get { return disposed; } }
    }
}
