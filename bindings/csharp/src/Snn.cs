// Safe C# binding of snn, an embeddable engine for training and running small
// neural networks on the CPU and on NVIDIA GPUs.
//
// Every wrapper is IDisposable. Dispose (or a using block) frees the native
// memory at once, GPU memory included; a finalizer frees it too, but only when
// the garbage collector gets round to it, which does not see GPU memory, so
// dispose models, caches, optimisers and data sets that live on a GPU.
//
// Handles may be disposed (or finalized) in any order. A cache or an optimiser
// keeps working after its model is disposed for every call that takes only
// itself; a call that needs the disposed model (Forward, Backprop, Step)
// throws ObjectDisposedException.
using System;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

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

    /// <summary>A failed snn call: its status and the library's message.</summary>
    public class SnnException : Exception
    {
        public Status Status { get; private set; }

        public SnnException(Status status, string message) : base(message)
        {
            Status = status;
        }
    }

    /// <summary>Where one layer's parameters lie in the flat vector.</summary>
    public struct LayerParams
    {
        public long WeightOffset, WeightCount, BiasOffset, BiasCount;
    }

    /// <summary>Library-wide functions and settings.</summary>
    public static class Library
    {
        public const int CpuDevice = -1;
        const int BindingMajor = 0;
        static bool versionChecked;
        // One delegate for the whole process, never collected: the library may
        // still call the pointer it was given while another thread replaces the
        // receiver, so the pointer must stay valid for good.
        static readonly LogCallback logTrampoline = Log;
        static volatile Action<LogLevel, string> logReceiver;
        static Exception logReceiverException;

        internal static string Text(IntPtr p)
        {
            return p == IntPtr.Zero ? "" : Marshal.PtrToStringAnsi(p);
        }

        /// <summary>Throws an SnnException for a failed status, with the message
        /// read right after the call, before anything else can replace it.</summary>
        internal static void Check(int status)
        {
            if (status != 0)
                throw new SnnException((Status)status, Text(NativeMethods.snn_last_error()));
        }

        internal static UIntPtr Size(long n) { return new UIntPtr((ulong)n); }

        /// <summary>A handle about to be passed along with others, checked first:
        /// Mono's marshaller, finding a closed SafeHandle after it has taken a
        /// reference on the ones before it, throws without giving that reference
        /// back, so those would never be freed.</summary>
        internal static T Live<T>(T handle, string type, string message) where T : SafeHandle
        {
            if (handle.IsClosed) throw new ObjectDisposedException(type, message);
            return handle;
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
        public static string VersionString { get { return Text(NativeMethods.snn_version_string()); } }
        public static string BuildFeatures { get { return Text(NativeMethods.snn_build_features()); } }
        public static bool HasFeature(string feature) { return NativeMethods.snn_has_feature(feature) != 0; }
        public static string StatusString(Status status) { return Text(NativeMethods.snn_status_string((int)status)); }

        public static int NumThreads
        {
            get { return NativeMethods.snn_get_num_threads(); }
            set { Check(NativeMethods.snn_set_num_threads(value)); }
        }

        public static void SetCheckFinite(bool on) { Check(NativeMethods.snn_set_check_finite(on ? 1 : 0)); }
        public static void SetAllowTf32(bool on) { Check(NativeMethods.snn_set_allow_tf32(on ? 1 : 0)); }

        /// <summary>Installs (or with null removes) the log receiver. It runs on
        /// the thread of the failing call and must not call into snn. An
        /// exception it throws never reaches the library (unwinding through
        /// native frames would crash the runtime): the message is dropped, the
        /// failing call still throws its own SnnException, the receiver stays
        /// installed, and TakeLogCallbackException returns the exception.</summary>
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

        /// <summary>The last exception the log receiver threw since the previous
        /// call, or null; taking it clears it.</summary>
        public static Exception TakeLogCallbackException()
        {
            return Interlocked.Exchange(ref logReceiverException, null);
        }

        static void Log(IntPtr userData, int level, IntPtr message)
        {
            try
            {
                var receiver = logReceiver;
                if (receiver != null) receiver((LogLevel)level, Text(message));
            }
            catch (Exception e)
            {
                Interlocked.Exchange(ref logReceiverException, e);
            }
        }

        public static int GpuCount { get { return NativeMethods.snn_gpu_count(); } }

        /// <summary>Status.Ok when GPU `device` can be used, otherwise the reason.</summary>
        public static Status GpuStatus(int device) { return (Status)NativeMethods.snn_gpu_status(device); }
    }

    /// <summary>A network: its layers and its flat parameter vector.</summary>
    public sealed class Model : IDisposable
    {
        internal readonly ModelHandle Handle;

        Model(ModelHandle handle) { Handle = handle; }

        /// <summary>Parses a spec such as "input 1; dense 10 tanh; dense 1".</summary>
        public Model(string spec)
        {
            Library.CheckVersion();
            Library.Check(NativeMethods.snn_model_create(spec, out Handle));
        }

        public static Model Load(string path)
        {
            Library.CheckVersion();
            ModelHandle h;
            Library.Check(NativeMethods.snn_model_load(path, out h));
            return new Model(h);
        }

        public static Model FromBytes(byte[] bytes)
        {
            Library.CheckVersion();
            ModelHandle h;
            Library.Check(NativeMethods.snn_model_load_from_buffer(bytes, Library.Size(bytes.Length), out h));
            return new Model(h);
        }

        /// <summary>Loads a checkpoint as a CPU model and its optimiser.</summary>
        public static Model LoadCheckpoint(string path, out Optimiser optimiser)
        {
            Library.CheckVersion();
            ModelHandle m;
            OptimiserHandle o;
            Library.Check(NativeMethods.snn_checkpoint_load(path, out m, out o));
            optimiser = new Optimiser(o);
            return new Model(m);
        }

        public void Save(string path) { Library.Check(NativeMethods.snn_model_save(Handle, path)); }

        public void SaveCheckpoint(Optimiser optimiser, string path)
        {
            Library.Check(NativeMethods.snn_checkpoint_save(Live, optimiser.Live, path));
        }

        public byte[] ToBytes()
        {
            UIntPtr size;
            Library.Check(NativeMethods.snn_model_save_to_buffer(Handle, null, UIntPtr.Zero, out size));
            var bytes = new byte[(long)size.ToUInt64()];
            Library.Check(NativeMethods.snn_model_save_to_buffer(Handle, bytes, size, out size));
            return bytes;
        }

        /// <summary>The canonical spec, which the constructor parses back into the same model.</summary>
        public string Describe()
        {
            UIntPtr length;
            Library.Check(NativeMethods.snn_model_describe(Handle, null, UIntPtr.Zero, out length));
            var buf = new byte[(long)length.ToUInt64() + 1];
            Library.Check(NativeMethods.snn_model_describe(Handle, buf, Library.Size(buf.Length), out length));
            return Encoding.UTF8.GetString(buf, 0, (int)length.ToUInt64());
        }

        public long LayerCount
        {
            get { long n; Library.Check(NativeMethods.snn_model_layer_count(Handle, out n)); return n; }
        }

        /// <summary>The output shape of a layer as (channels, height, width).</summary>
        public long[] LayerShape(long layer)
        {
            long c, h, w;
            Library.Check(NativeMethods.snn_model_layer_shape(Handle, layer, out c, out h, out w));
            return new[] { c, h, w };
        }

        public LayerParams LayerParams(long layer)
        {
            UIntPtr wo, wc, bo, bc;
            Library.Check(NativeMethods.snn_model_layer_params(Handle, layer, out wo, out wc, out bo, out bc));
            return new LayerParams {
                WeightOffset = (long)wo.ToUInt64(), WeightCount = (long)wc.ToUInt64(),
                BiasOffset = (long)bo.ToUInt64(), BiasCount = (long)bc.ToUInt64() };
        }

        public long InputSize
        {
            get { UIntPtr n; Library.Check(NativeMethods.snn_model_input_size(Handle, out n)); return (long)n.ToUInt64(); }
        }

        public long OutputSize
        {
            get { UIntPtr n; Library.Check(NativeMethods.snn_model_output_size(Handle, out n)); return (long)n.ToUInt64(); }
        }

        public long ParameterCount
        {
            get { UIntPtr n; Library.Check(NativeMethods.snn_parameter_count(Handle, out n)); return (long)n.ToUInt64(); }
        }

        public void Init(ulong seed) { Library.Check(NativeMethods.snn_model_init(Handle, seed)); }

        /// <summary>Zero-copy pointer to a CPU model's parameters, valid while the
        /// model lives on the CPU and is not disposed.</summary>
        public IntPtr ParametersPointer(out long count)
        {
            IntPtr data;
            UIntPtr n;
            Library.Check(NativeMethods.snn_parameters(Handle, out data, out n));
            count = (long)n.ToUInt64();
            return data;
        }

        /// <summary>Copies the parameters out (any device) into a new array.</summary>
        public float[] GetParameters()
        {
            var dst = new float[ParameterCount];
            GetParameters(dst);
            return dst;
        }

        /// <summary>Copies the parameters into dst, which is pinned, not copied.</summary>
        public void GetParameters(float[] dst)
        {
            Library.Check(NativeMethods.snn_get_parameters(Handle, dst, Library.Size(dst.Length)));
        }

        public void SetParameters(float[] src)
        {
            Library.Check(NativeMethods.snn_set_parameters(Handle, src, Library.Size(src.Length)));
        }

        /// <summary>Library.CpuDevice or the GPU index the model lives on.</summary>
        public int Device
        {
            get { int d; Library.Check(NativeMethods.snn_model_device(Handle, out d)); return d; }
        }

        public void ToGpu(int device) { Library.Check(NativeMethods.snn_to_gpu(Handle, device)); }
        public void ToCpu() { Library.Check(NativeMethods.snn_to_cpu(Handle)); }

        /// <summary>Moves the model to GPU 0 when one can be used; returns where it is.</summary>
        public int ToBestDevice()
        {
            int d;
            Library.Check(NativeMethods.snn_to_best_device(Handle, out d));
            return d;
        }

        public ForwardCache Preallocate(long maxBatch) { return new ForwardCache(this, maxBatch); }
        public BackwardCache PreallocateGrads(long maxBatch) { return new BackwardCache(this, maxBatch); }
        public Optimiser CreateOptimiser(OptimiserKind kind) { return new Optimiser(this, kind); }

        /// <summary>Frees the model's parameters now (GPU memory included). Its
        /// caches and optimisers stay usable for the calls that take only them.</summary>
        public void Dispose() { Handle.Dispose(); }

        public bool IsDisposed { get { return Handle.IsClosed; } }

        /// <summary>The handle, for calls that pass other handles too; a disposed
        /// model throws ObjectDisposedException instead of reaching the library.</summary>
        internal ModelHandle Live
        {
            get
            {
                return Library.Live(Handle, "Snn.Model",
                    "the model was disposed; its caches and optimisers answer only the calls that do not need it");
            }
        }
    }

    /// <summary>The buffers of forward passes of one model. It keeps its model
    /// reachable, so the model is not finalized while the cache is in use; after
    /// the model is disposed, every call but Forward keeps working.</summary>
    public sealed class ForwardCache : IDisposable
    {
        internal readonly ForwardCacheHandle Handle;
        readonly long inputSize, outputSize;

        internal ForwardCacheHandle Live { get { return Library.Live(Handle, "Snn.ForwardCache", "the forward cache was disposed"); } }
        public Model Model { get; private set; }

        internal ForwardCache(Model model, long maxBatch)
        {
            Model = model;
            inputSize = model.InputSize;
            outputSize = model.OutputSize;
            Library.Check(NativeMethods.snn_preallocate(model.Handle, maxBatch, out Handle));
        }

        public long Batch
        {
            get { long b, m; Library.Check(NativeMethods.snn_cache_batch(Handle, out b, out m)); return b; }
            set { Library.Check(NativeMethods.snn_cache_set_batch(Handle, value)); }
        }

        public long MaxBatch
        {
            get { long b, m; Library.Check(NativeMethods.snn_cache_batch(Handle, out b, out m)); return m; }
        }

        /// <summary>Copies batch * features inputs, [batch][features].</summary>
        public void SetInputs(float[] inputs)
        {
            Library.Check(NativeMethods.snn_set_inputs(Handle, inputs, Library.Size(inputs.Length)));
        }

        /// <summary>Gathers whole samples of data by index; the batch becomes indices.Length.</summary>
        public void SetInputsGather(float[] data, long[] indices)
        {
            long samples = inputSize == 0 ? 0 : data.Length / inputSize;
            Library.Check(NativeMethods.snn_set_inputs_gather(Handle, data, Library.Size(samples), indices,
                                                              Library.Size(indices.Length)));
        }

        public void SetInputsFromDataset(Dataset dataset, long[] indices)
        {
            Library.Check(NativeMethods.snn_set_inputs_from_dataset(Live, dataset.Live, indices,
                                                                    Library.Size(indices.Length)));
        }

        /// <summary>Copies count floats that already live in memory of the cache's GPU.</summary>
        public void SetInputsDevice(IntPtr deviceInputs, long count)
        {
            Library.Check(NativeMethods.snn_set_inputs_device(Handle, deviceInputs, Library.Size(count)));
        }

        /// <summary>Runs the model on the cache's inputs (ObjectDisposedException
        /// when the model was disposed).</summary>
        public void Forward() { Library.Check(NativeMethods.snn_forward(Live, Model.Live)); }

        /// <summary>Zero-copy pointer to the outputs (CPU caches), valid until the next Forward.</summary>
        public IntPtr OutputsPointer(out long count)
        {
            IntPtr data;
            UIntPtr n;
            Library.Check(NativeMethods.snn_outputs(Handle, out data, out n));
            count = (long)n.ToUInt64();
            return data;
        }

        /// <summary>The outputs, [batch][outputs], copied into a new array (any device).</summary>
        public float[] GetOutputs()
        {
            var dst = new float[Batch * outputSize];
            GetOutputs(dst);
            return dst;
        }

        public void GetOutputs(float[] dst)
        {
            Library.Check(NativeMethods.snn_get_outputs(Handle, dst, Library.Size(dst.Length)));
        }

        public void Dispose() { Handle.Dispose(); }
    }

    /// <summary>Gradient buffers for one model. After the model is disposed,
    /// every call but the backprops keeps working.</summary>
    public sealed class BackwardCache : IDisposable
    {
        internal readonly BackwardCacheHandle Handle;
        readonly long parameterCount;

        internal BackwardCacheHandle Live { get { return Library.Live(Handle, "Snn.BackwardCache", "the backward cache was disposed"); } }
        public Model Model { get; private set; }

        internal BackwardCache(Model model, long maxBatch)
        {
            Model = model;
            parameterCount = model.ParameterCount;
            Library.Check(NativeMethods.snn_preallocate_grads(model.Handle, maxBatch, out Handle));
        }

        public void SetTargets(float[] targets)
        {
            Library.Check(NativeMethods.snn_set_targets(Handle, targets, Library.Size(targets.Length)));
        }

        /// <summary>0-based class labels for Loss.LogitCrossEntropy.</summary>
        public void SetLabels(int[] labels)
        {
            Library.Check(NativeMethods.snn_set_labels(Handle, labels, Library.Size(labels.Length)));
        }

        public void SetLabelsGather(int[] labels, long[] indices)
        {
            Library.Check(NativeMethods.snn_set_labels_gather(Handle, labels, Library.Size(labels.Length), indices,
                                                              Library.Size(indices.Length)));
        }

        public void SetLabelsFromDataset(Dataset dataset, long[] indices)
        {
            Library.Check(NativeMethods.snn_set_labels_from_dataset(Live, dataset.Live, indices,
                                                                    Library.Size(indices.Length)));
        }

        public void SetInputGradient(bool enabled)
        {
            Library.Check(NativeMethods.snn_set_input_gradient(Handle, enabled ? 1 : 0));
        }

        /// <summary>Loss of fwd's last forward pass and its gradient; returns the loss.</summary>
        public float Backprop(ForwardCache fwd, Loss loss)
        {
            float value;
            Library.Check(NativeMethods.snn_backprop(Live, fwd.Live, Model.Live, (int)loss, out value));
            return value;
        }

        public void BackpropWithOutputGradient(ForwardCache fwd, float[] outputGradient)
        {
            Library.Check(NativeMethods.snn_backprop_with_output_gradient(Live, fwd.Live, Model.Live,
                                                                          outputGradient,
                                                                          Library.Size(outputGradient.Length)));
        }

        /// <summary>Zero-copy pointer to the gradient (CPU caches), valid until the next backprop.</summary>
        public IntPtr GradientsPointer(out long count)
        {
            IntPtr data;
            UIntPtr n;
            Library.Check(NativeMethods.snn_gradients(Handle, out data, out n));
            count = (long)n.ToUInt64();
            return data;
        }

        public float[] GetGradients()
        {
            var dst = new float[parameterCount];
            Library.Check(NativeMethods.snn_get_gradients(Handle, dst, Library.Size(dst.Length)));
            return dst;
        }

        /// <summary>Overwrites the gradient (e.g. with an average over workers) before an optimiser step.</summary>
        public void SetGradients(float[] src)
        {
            Library.Check(NativeMethods.snn_set_gradients(Handle, src, Library.Size(src.Length)));
        }

        public void GetInputGradients(float[] dst)
        {
            Library.Check(NativeMethods.snn_get_input_gradients(Handle, dst, Library.Size(dst.Length)));
        }

        public void Dispose() { Handle.Dispose(); }
    }

    /// <summary>An optimiser's state for one model; each Step names the model.
    /// It holds no model object and stays usable after its model is disposed.</summary>
    public sealed class Optimiser : IDisposable
    {
        internal readonly OptimiserHandle Handle;

        internal OptimiserHandle Live { get { return Library.Live(Handle, "Snn.Optimiser", "the optimiser was disposed"); } }

        internal Optimiser(OptimiserHandle handle) { Handle = handle; }

        internal Optimiser(Model model, OptimiserKind kind)
        {
            Library.Check(NativeMethods.snn_optimiser_create(model.Handle, (int)kind, out Handle));
        }

        public void Set(Hyperparameter which, double value)
        {
            Library.Check(NativeMethods.snn_optimiser_set(Handle, (int)which, value));
        }

        public double Get(Hyperparameter which)
        {
            double v;
            Library.Check(NativeMethods.snn_optimiser_get(Handle, (int)which, out v));
            return v;
        }

        public void Step(Model model, BackwardCache grads)
        {
            Library.Check(NativeMethods.snn_optimiser_step(Live, model.Live, grads.Live));
        }

        public void Reset() { Library.Check(NativeMethods.snn_optimiser_reset(Handle)); }

        public long StepCount
        {
            get { long n; Library.Check(NativeMethods.snn_optimiser_step_count(Handle, out n)); return n; }
        }

        public void Dispose() { Handle.Dispose(); }
    }

    /// <summary>A data set copied once to a device, gathered from by index.</summary>
    public sealed class Dataset : IDisposable
    {
        internal readonly DatasetHandle Handle;

        internal DatasetHandle Live { get { return Library.Live(Handle, "Snn.Dataset", "the data set was disposed"); } }

        /// <summary>samples holds whole samples of `features` floats; labels
        /// (may be null) one 0-based label per sample.</summary>
        public Dataset(int device, float[] samples, long features, int[] labels)
        {
            Library.CheckVersion();
            long count = features == 0 ? 0 : samples.Length / features;
            if (labels != null && labels.Length != count)
                throw new SnnException(Status.Count, "Dataset: " + labels.Length + " labels for " + count + " samples");
            Library.Check(NativeMethods.snn_dataset_create(device, samples, Library.Size(count), Library.Size(features),
                                                           labels, out Handle));
        }

        public void Dispose() { Handle.Dispose(); }
    }
}
