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
        GpuDriver = 17, NoGpu = 18, GpuIndex = 19, Cuda = 20, Internal = 21, Token = 22
    }

    public enum Loss { Mse = 1, LogitCrossEntropy = 2, Huber = 3, SmoothL1 = 4, BceWithLogits = 5 }

    public enum OptimiserKind { Sgd = 1, Adam = 2, AdamW = 3, RmsProp = 4, Lion = 5 }

    public enum Hyperparameter
    {
        LearningRate = 1, Momentum = 2, Nesterov = 3, Beta1 = 4, Beta2 = 5, Epsilon = 6,
        WeightDecay = 7, Alpha = 8, Dampening = 9, MaxGradNorm = 10
    }

    public enum LogLevel { Error = 0, Warning = 1, Info = 2 }

    /// <summary>The precision of a forward cache's passes, torch.autocast's rule:
    /// the matrix products of dense, conv, conv1d, attention, lstm and gru layers
    /// (forward and backward) round their operands to bf16 or fp16 and accumulate
    /// in float32; everything else computes in float32. Parameters stay float32
    /// (the master copy) and gradients arrive float32. Bf16 runs natively on CPUs
    /// with AVX-512 BF16 and on GPUs of compute capability 8.0 or newer, emulated
    /// on other CPUs (same values, no speed-up); Fp16 runs on GPUs only.</summary>
    public enum Precision { Float32 = 0, Bf16 = 1, Fp16 = 2 }

    /// <summary>Dynamic loss scaling of a backward cache, torch.cuda.amp.GradScaler's
    /// rule. While On, Backprop multiplies the loss's gradient by Scale, divides the
    /// gradients by it and checks them: finite gradients count a good step (after
    /// GrowthInterval in a row Scale is multiplied by GrowthFactor); an overflow
    /// marks the step Skipped (the next Optimiser.Step changes nothing) and
    /// multiplies Scale by BackoffFactor.</summary>
    public struct LossScaling : IEquatable<LossScaling>
    {
        /// <summary>Whether loss scaling is on.</summary>
        public bool On;
        /// <summary>The scale of the next backprop (1 when off); finite and > 0 as a float.</summary>
        public double Scale;
        /// <summary>Multiplies Scale after GrowthInterval good steps; > 1.</summary>
        public double GrowthFactor;
        /// <summary>Multiplies Scale after an overflow; in (0, 1).</summary>
        public double BackoffFactor;
        /// <summary>Good steps in a row before Scale grows; in [1, 2^53].</summary>
        public long GrowthInterval;
        /// <summary>Good steps counted towards the next growth; in [0, GrowthInterval).</summary>
        public long GoodSteps;
        /// <summary>Whether the last backprop overflowed, so its step is skipped
        /// (read only: setting BackwardCache.LossScaling ignores it).</summary>
        public bool Skipped;

        /// <summary>On, with PyTorch's defaults: scale 65536, growth 2, backoff 0.5,
        /// interval 2000, no good steps yet.</summary>
        public static LossScaling Default
        {
            get
            {
                return new LossScaling { On = true, Scale = 65536.0, GrowthFactor = 2.0, BackoffFactor = 0.5,
                                         GrowthInterval = 2000, GoodSteps = 0, Skipped = false };
            }
        }

        public bool Equals(LossScaling o)
        {
            return On == o.On && Scale.Equals(o.Scale) && GrowthFactor.Equals(o.GrowthFactor) &&
                   BackoffFactor.Equals(o.BackoffFactor) && GrowthInterval == o.GrowthInterval &&
                   GoodSteps == o.GoodSteps && Skipped == o.Skipped;
        }

        public override bool Equals(object o) { return o is LossScaling && Equals((LossScaling)o); }

        public override int GetHashCode()
        {
            return Scale.GetHashCode() ^ GrowthFactor.GetHashCode() * 7 ^ BackoffFactor.GetHashCode() * 13 ^
                   GrowthInterval.GetHashCode() * 31 ^ GoodSteps.GetHashCode() * 61 ^ (On ? 1 : 0) ^ (Skipped ? 2 : 0);
        }

        public override string ToString()
        {
            return string.Format(System.Globalization.CultureInfo.InvariantCulture,
                "LossScaling(On={0}, Scale={1:R}, GrowthFactor={2:R}, BackoffFactor={3:R}, GrowthInterval={4}, GoodSteps={5}, Skipped={6})",
                On, Scale, GrowthFactor, BackoffFactor, GrowthInterval, GoodSteps, Skipped);
        }
    }

    /// <summary>What an ONNX file may leave open, for Model.ImportOnnx.</summary>
    public sealed class OnnxImportOptions
    {
        /// <summary>Steps of a sequence input whose length the file leaves symbolic;
        /// 0: none given (such a file is then refused).</summary>
        public long SequenceLength { get; set; }
        /// <summary>The batch at which shape subgraphs that read the batch are folded; 0: none.</summary>
        public long Batch { get; set; }

        internal OnnxImportOptionsNative Native()
        {
            return new OnnxImportOptionsNative
            {
                Size = new UIntPtr((uint)Marshal.SizeOf(typeof(OnnxImportOptionsNative))),
                SequenceLength = SequenceLength,
                Batch = Batch,
            };
        }
    }

    /// <summary>Options of Model.ExportOnnx.</summary>
    public sealed class OnnxExportOptions
    {
        /// <summary>A sequence model gets a second graph input "lengths" (int32 [batch]).</summary>
        public bool Lengths { get; set; }

        internal OnnxExportOptionsNative Native()
        {
            return new OnnxExportOptionsNative
            {
                Size = new UIntPtr((uint)Marshal.SizeOf(typeof(OnnxExportOptionsNative))),
                Lengths = Lengths ? 1 : 0,
            };
        }
    }

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

    /// <summary>The input of a sequence model (Model.InputSequence): Steps is T
    /// for "input seq TxF" and "input tokens T vocab=V" (0 when the input is
    /// not a sequence), Vocab is V for token ids (0 for a model of floats).</summary>
    public struct SequenceInput
    {
        public int Steps, Vocab;
    }

    /// <summary>Where one layer's state (batchnorm's running_mean, running_var,
    /// num_batches_tracked) lies in the flat state vector.</summary>
    public struct LayerState
    {
        public long Offset, Count;
    }

    /// <summary>Marks a static method that native code calls through a
    /// delegate. Unity's IL2CPP (ahead-of-time) recognises the attribute by
    /// its name, in any namespace, and makes the method callable from native
    /// code; on Mono and .NET it is only a marker. The binding's tests check
    /// that every such method carries it.</summary>
    [AttributeUsage(AttributeTargets.Method, Inherited = false)]
    public sealed class MonoPInvokeCallbackAttribute : Attribute
    {
        public MonoPInvokeCallbackAttribute(Type delegateType) { DelegateType = delegateType; }
        public Type DelegateType { get; private set; }
    }

    /// <summary>What a view checks on each read: whether its owner was
    /// disposed, and whether the owner's memory changed since (its version).</summary>
    internal interface IViewOwner
    {
        int ViewVersion { get; }
        bool IsDisposed { get; }
        string ViewOwnerName { get; }
    }

    internal static class ViewCheck
    {
        internal static void Check(IViewOwner owner, int version)
        {
            if (owner == null) throw new InvalidOperationException("the view is empty (default)");
            if (owner.IsDisposed)
                throw new ObjectDisposedException(owner.ViewOwnerName,
                    "the view's owner was disposed: its memory is gone (copy with ToArray or Get... to keep values)");
            if (owner.ViewVersion != version)
                throw new InvalidOperationException("the view is stale: its " + owner.ViewOwnerName +
                    " ran Forward, changed its batch or precision, or moved to another device since it was taken");
        }
    }

    /// <summary>A read-only, checked view of the library's memory (a cache's
    /// outputs, a gradient), without a copy. Every read checks that the owner
    /// is alive and unchanged since the view was taken: a read after the owner
    /// was disposed throws ObjectDisposedException, after a later Forward (for
    /// outputs) InvalidOperationException, instead of reading freed or
    /// rewritten memory. Span gives the raw span (checked once, when taken) for
    /// loops that want no check per element. Outputs are [Batch][SampleSize];
    /// a gradient is one row (Batch 1).</summary>
    public struct ReadOnlyFloatView
    {
        readonly IViewOwner owner;
        readonly int version;
        readonly IntPtr data;
        readonly int length, batch;

        internal ReadOnlyFloatView(IViewOwner owner, IntPtr data, int length, int batch)
        {
            this.owner = owner;
            version = owner.ViewVersion;
            this.data = data;
            this.length = length;
            this.batch = batch;
        }

        public int Length { get { return length; } }
        /// <summary>The samples of an outputs view (1 for a gradient).</summary>
        public int Batch { get { return batch; } }
        /// <summary>Values per sample: Length / Batch (the model's OutputSize for outputs).</summary>
        public int SampleSize { get { return batch == 0 ? 0 : length / batch; } }
        /// <summary>False once the owner is disposed or changed: reading would throw.</summary>
        public bool IsValid { get { return owner != null && !owner.IsDisposed && owner.ViewVersion == version; } }

        public unsafe float this[int index]
        {
            get
            {
                ViewCheck.Check(owner, version);
                if ((uint)index >= (uint)length) throw new IndexOutOfRangeException();
                return ((float*)data)[index];
            }
        }

        /// <summary>Value j of sample b: this[b * SampleSize + j].</summary>
        public float this[int sample, int j]
        {
            get
            {
                int size = SampleSize;
                if ((uint)j >= (uint)size || (uint)sample >= (uint)batch) throw new IndexOutOfRangeException();
                return this[sample * size + j];
            }
        }

        /// <summary>The raw span over the same memory, checked once now. It is
        /// not checked again: reading it after the owner is disposed or changed
        /// reads freed or rewritten memory. Keep it within the loop that takes it.</summary>
        public unsafe ReadOnlySpan<float> Span
        {
            get
            {
                ViewCheck.Check(owner, version);
                return new ReadOnlySpan<float>((void*)data, length);
            }
        }

        public float[] ToArray() { return Span.ToArray(); }
        public void CopyTo(Span<float> destination) { Span.CopyTo(destination); }
        /// <summary>The index of the largest value of sample b (a classifier's
        /// prediction), or -1 for an empty sample.</summary>
        public int ArgMax(int sample)
        {
            int size = SampleSize;
            if ((uint)sample >= (uint)batch) throw new IndexOutOfRangeException();
            var row = Span.Slice(sample * size, size);
            int best = -1;
            for (int j = 0; j < row.Length; j++)
                if (best < 0 || row[j] > row[best]) best = j;
            return best;
        }
    }

    /// <summary>A writable, checked view of a CPU model's parameters, without a
    /// copy: every read and write checks that the model is alive and still on
    /// the CPU (ObjectDisposedException, InvalidOperationException otherwise).
    /// Span gives the raw span, checked once when taken.</summary>
    public struct FloatView
    {
        readonly IViewOwner owner;
        readonly int version;
        readonly IntPtr data;
        readonly int length;

        internal FloatView(IViewOwner owner, IntPtr data, int length)
        {
            this.owner = owner;
            version = owner.ViewVersion;
            this.data = data;
            this.length = length;
        }

        public int Length { get { return length; } }
        public bool IsValid { get { return owner != null && !owner.IsDisposed && owner.ViewVersion == version; } }

        public unsafe float this[int index]
        {
            get
            {
                ViewCheck.Check(owner, version);
                if ((uint)index >= (uint)length) throw new IndexOutOfRangeException();
                return ((float*)data)[index];
            }
            set
            {
                ViewCheck.Check(owner, version);
                if ((uint)index >= (uint)length) throw new IndexOutOfRangeException();
                ((float*)data)[index] = value;
            }
        }

        /// <summary>The raw span, checked once now (see ReadOnlyFloatView.Span).</summary>
        public unsafe Span<float> Span
        {
            get
            {
                ViewCheck.Check(owner, version);
                return new Span<float>((void*)data, length);
            }
        }

        public float[] ToArray() { return Span.ToArray(); }
        public void CopyTo(Span<float> destination) { Span.CopyTo(destination); }
    }

    /// <summary>What Model.Predict returns: the outputs, copied, with their shape.</summary>
    public sealed class Prediction
    {
        internal Prediction(float[] values, int batch, int[] sampleShape)
        {
            Values = values;
            Batch = batch;
            SampleShape = sampleShape;
        }

        /// <summary>[Batch][SampleSize], row-major.</summary>
        public float[] Values { get; private set; }
        public int Batch { get; private set; }
        /// <summary>The output layer's shape per sample, (channels, height, width)
        /// as Model.LayerShape gives it: (n, 1, 1) for a dense output of n.</summary>
        public int[] SampleShape { get; private set; }
        public int SampleSize { get { return Batch == 0 ? 0 : Values.Length / Batch; } }
        public float this[int sample, int j] { get { return Values[sample * SampleSize + j]; } }
        /// <summary>The index of the largest value of sample b (a classifier's prediction).</summary>
        public int ArgMax(int sample)
        {
            int size = SampleSize, best = 0;
            for (int j = 1; j < size; j++)
                if (Values[sample * size + j] > Values[sample * size + best]) best = j;
            return best;
        }
    }

    /// <summary>The mode a new forward cache starts in.</summary>
    public enum CacheMode
    {
        /// <summary>Batchnorm uses and updates batch statistics, dropout drops
        /// (what Model.Preallocate gives).</summary>
        Training = 0,
        /// <summary>Batchnorm uses the running statistics, dropout passes its
        /// input through, a pass only reads the model (Model.PreallocateInference).</summary>
        Inference = 1
    }

    /// <summary>Library-wide functions and settings.</summary>
    public static class Library
    {
        public const int CpuDevice = NativeMethods.SNN_DEVICE_CPU;
        /// <summary>The most layers (after the input) a spec or model file may declare.</summary>
        public const int MaxLayers = NativeMethods.SNN_MAX_LAYERS;
        /// <summary>The most characters a spec may have.</summary>
        public const int MaxSpecLength = NativeMethods.SNN_MAX_SPEC_LENGTH;
        const int BindingMajor = NativeMethods.SNN_VERSION_MAJOR;
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

        // Mono resolves a [DllImport] when it compiles the method that calls it,
        // so the library must be loaded from a package layout (when one is
        // beside Snn.dll) before the first method calling into it is compiled.
        // Every path into the library starts at Library, Model, Checkpoint or
        // Dataset, and each has an explicit static constructor that does it:
        // explicit, the runtime runs it before the class's first use (a call
        // of its constructor or of a static method), ahead of compiling them.
        static Library()
        {
#if !NET5_0_OR_GREATER
            NativeLibraryName.Preload();
#endif
        }

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

        /// <summary>A size that spans and arrays are indexed with, as an int. It
        /// fits for every model whose data a span can hold; otherwise the
        /// OverflowException names the size (`what`) and its value.</summary>
        internal static int Int(long n, string what)
        {
            if (n < 0 || n > int.MaxValue)
                throw new OverflowException(what + " is " + n + ", outside the range of an int " +
                    "(the largest span or array index); this model's data cannot be held in a span");
            return (int)n;
        }

        internal static int Int(UIntPtr n, string what) { return Int(Long(n), what); }

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
            int loaded = VersionNumber;
            if (loaded / 1000000 != BindingMajor)
                throw new SnnException(Status.Unsupported, "libsnn " + VersionString +
                    " is loaded but this binding needs major version " + BindingMajor);
            versionChecked = true;
        }

        // The public static members below call into the library through the
        // methods of Calls, never directly: Mono resolves a [DllImport] when it
        // compiles the method calling it, and these members may be a program's
        // first use of snn, whose static constructor (the package preload) runs
        // only once the member itself has been compiled.
        public static int VersionNumber { get { return Calls.VersionNumber(); } }
        public static string VersionString { get { return Utf8(Calls.VersionString()); } }
        /// <summary>The features of this build separated by spaces, e.g. "cpu openblas cuda-plugin".</summary>
        public static string BuildFeatures { get { return Utf8(Calls.BuildFeatures()); } }
        public static bool HasFeature(string feature) { return Calls.HasFeature(Utf8z(feature, "feature")) != 0; }
        public static string StatusString(Status status) { return Utf8(Calls.StatusString((int)status)); }

        /// <summary>The bound on the CPU threads the library uses (OpenBLAS included).</summary>
        public static int NumThreads
        {
            get { return Calls.GetNumThreads(); }
            set { Check(Calls.SetNumThreads(value)); }
        }

        /// <summary>With on, backprops and optimiser steps refuse NaN or Inf
        /// (Status.NotFinite) instead of poisoning the model.</summary>
        public static void SetCheckFinite(bool on) { Check(Calls.SetCheckFinite(on ? 1 : 0)); }

        /// <summary>Lets GPU caches created afterwards use TF32 tensor-core math.</summary>
        public static void SetAllowTf32(bool on) { Check(Calls.SetAllowTf32(on ? 1 : 0)); }

        /// <summary>The library calls of Library's static members (see above).</summary>
        static class Calls
        {
            [MethodImpl(MethodImplOptions.NoInlining)] internal static int VersionNumber() { return NativeMethods.snn_version_number(); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static IntPtr VersionString() { return NativeMethods.snn_version_string(); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static IntPtr BuildFeatures() { return NativeMethods.snn_build_features(); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static int HasFeature(byte[] f) { return NativeMethods.snn_has_feature(f); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static IntPtr StatusString(int s) { return NativeMethods.snn_status_string(s); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static int GetNumThreads() { return NativeMethods.snn_get_num_threads(); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static int SetNumThreads(int n) { return NativeMethods.snn_set_num_threads(n); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static int SetCheckFinite(int on) { return NativeMethods.snn_set_check_finite(on); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static int SetAllowTf32(int on) { return NativeMethods.snn_set_allow_tf32(on); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static int SetLogCallback(LogCallback c) { return NativeMethods.snn_set_log_callback(c, IntPtr.Zero); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static int GpuCount() { return NativeMethods.snn_gpu_count(); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static int GpuStatus(int d) { return NativeMethods.snn_gpu_status(d); }
            [MethodImpl(MethodImplOptions.NoInlining)] internal static int PrecisionSupport(int d, int p, out int n) { return NativeMethods.snn_precision_support(d, p, out n); }
        }

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
                Check(Calls.SetLogCallback(null));
                logReceiver = null;
                return;
            }
            logReceiver = receiver;
            Check(Calls.SetLogCallback(logTrampoline));
        }

        /// <summary>The last exception the log receiver threw on a message that
        /// was not a failing call's, or null; taking it clears it.</summary>
        public static Exception TakeLogCallbackException()
        {
            return Interlocked.Exchange(ref recordedReceiverException, null);
        }

        // Unity's IL2CPP compiles ahead of time and can only hand native code a
        // static method marked with MonoPInvokeCallback naming its delegate type.
        [MonoPInvokeCallback(typeof(LogCallback))]
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
        public static int GpuCount { get { return Calls.GpuCount(); } }

        /// <summary>Status.Ok when GPU `device` can be used, otherwise the reason
        /// (GpuPluginNotFound, GpuDriver, NoGpu, GpuIndex).</summary>
        public static Status GpuStatus(int device)
        {
            int status = Calls.GpuStatus(device);
            SettleLogReceiverException();
            return (Status)status;
        }

        /// <summary>Throws an SnnException with the reason when GPU `device` cannot be used.</summary>
        public static void RequireGpu(int device) { Check(Calls.GpuStatus(device)); }

        /// <summary>Status.Ok when `device` (CpuDevice or a GPU index) can compute in
        /// `precision`, with native true when it runs natively and false when emulated
        /// (Bf16 on a CPU without AVX-512 BF16); otherwise the reason (Unsupported:
        /// Fp16 on the CPU, and GpuStatus's statuses for a GPU) and native false.</summary>
        public static Status PrecisionSupport(int device, Precision precision, out bool native)
        {
            int n = 0;
            int status = Calls.PrecisionSupport(device, (int)precision, out n);
            SettleLogReceiverException();
            native = status == (int)Status.Ok && n != 0;
            return (Status)status;
        }

        /// <summary>Whether `device` runs `precision` natively (false: emulated);
        /// throws an SnnException with the reason when it cannot run it.</summary>
        public static bool RequirePrecision(int device, Precision precision)
        {
            int native;
            Check(Calls.PrecisionSupport(device, (int)precision, out native));
            return native != 0;
        }
    }

    /// <summary>A read or write lock on a model, held for one call (a struct,
    /// so that `using` on it allocates nothing).</summary>
    internal struct ModelAccess : IDisposable
    {
        readonly ReaderWriterLockSlim lockOfModel;
        readonly bool write;

        internal ModelAccess(ReaderWriterLockSlim lockOfModel, bool write)
        {
            if (write) lockOfModel.EnterWriteLock(); else lockOfModel.EnterReadLock();
            this.lockOfModel = lockOfModel;
            this.write = write;
        }

        public void Dispose()
        {
            if (write) lockOfModel.ExitWriteLock(); else lockOfModel.ExitReadLock();
        }
    }

    /// <summary>A network: its graph of layers, its flat parameter vector and its
    /// flat state vector (batchnorm's running statistics).
    ///
    /// Threads: several threads may run one model at once, each with its own
    /// caches. The model serialises the calls that write it with those that
    /// read it through a read-write lock, so that the data races snn.h warns
    /// of cannot happen through the binding. Writers run alone: a
    /// training-mode Forward of a model with state (it updates the running
    /// statistics), Optimiser.Step, Init, SetParameters, SetState, ToGpu,
    /// ToCpu and ToBestDevice. Readers run together: inference passes,
    /// training passes of a model without state, backprops, the Get methods,
    /// saves. ParametersView is not covered: a span outlives the call.</summary>
    public sealed class Model : IDisposable, IViewOwner
    {
        // See Library's static constructor: the first use of the class loads
        // the library from a package layout, before its methods are compiled.
        static Model()
        {
#if !NET5_0_OR_GREATER
            NativeLibraryName.Preload();
#endif
        }

        internal readonly ModelHandle Handle;
        // Never disposed: a cache on another thread may be waiting on it when
        // the model is disposed, and it holds nothing the collector cannot free.
        readonly ReaderWriterLockSlim access = new ReaderWriterLockSlim();
        readonly bool hasState;
        volatile bool disposed;

        /// <summary>Wraps a new handle; disposes it when the state query fails.</summary>
        Model(ModelHandle handle)
        {
            try
            {
                UIntPtr n;
                Library.Check(NativeMethods.snn_state_count(handle, out n));
                hasState = n != UIntPtr.Zero;
            }
            catch
            {
                handle.Dispose();
                throw;
            }
            Handle = handle;
        }

        internal static Model Wrap(ModelHandle handle) { return new Model(handle); }

        /// <summary>Parses a spec such as "input 1; dense 10 tanh; dense 1" (see
        /// snn.h for every layer). A NUL in the spec is an ArgumentException.</summary>
        public Model(string spec) : this(Create(spec)) { }

        static ModelHandle Create(string spec)
        {
            var text = Library.Utf8z(spec, "spec");
            Library.CheckVersion();
            ModelHandle h;
            Library.Check(NativeMethods.snn_model_create(text, out h));
            return h;
        }

        /// <summary>Loads a model file (safetensors) onto the CPU.</summary>
        public static Model Load(string path)
        {
            return LoadCalls(path);   // see Library.Calls
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static Model LoadCalls(string path)
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
            return FromBytesCalls(bytes);   // see Library.Calls
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static Model FromBytesCalls(byte[] bytes)
        {
            if (bytes == null) throw new ArgumentNullException("bytes");
            Library.CheckVersion();
            ModelHandle h;
            Library.Check(NativeMethods.snn_model_load_from_buffer(bytes, Library.Size(bytes.Length), out h));
            return new Model(h);
        }

        /// <summary>Imports an ONNX file (what torch.onnx.export writes for the models
        /// snn holds, or snn's own export) as a new CPU model, ready to run and to
        /// train. A file snn cannot represent throws SnnException with
        /// Status.Unsupported, whose message lists every node that cannot be mapped;
        /// a broken file Status.FileFormat.</summary>
        public static Model ImportOnnx(string path, OnnxImportOptions options = null)
        {
            return ImportOnnxCalls(path, options);   // see Library.Calls
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static Model ImportOnnxCalls(string path, OnnxImportOptions options)
        {
            var p = Library.Utf8z(path, "path");
            Library.CheckVersion();
            var o = (options ?? new OnnxImportOptions()).Native();
            ModelHandle h;
            Library.Check(NativeMethods.snn_model_import_onnx(p, ref o, out h));
            return new Model(h);
        }

        /// <summary>ImportOnnx from the bytes of an ONNX file.</summary>
        public static Model ImportOnnx(byte[] bytes, OnnxImportOptions options = null)
        {
            return ImportOnnxCalls(bytes, options);   // see Library.Calls
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static Model ImportOnnxCalls(byte[] bytes, OnnxImportOptions options)
        {
            if (bytes == null) throw new ArgumentNullException("bytes");
            Library.CheckVersion();
            var o = (options ?? new OnnxImportOptions()).Native();
            ModelHandle h;
            Library.Check(NativeMethods.snn_model_import_onnx_from_buffer(bytes, Library.Size(bytes.Length), ref o, out h));
            return new Model(h);
        }

        /// <summary>Writes the model as an ONNX file (opset 17, symbolic batch), atomically.</summary>
        public void ExportOnnx(string path, OnnxExportOptions options = null)
        {
            var p = Library.Utf8z(path, "path");
            var m = Live;
            var o = (options ?? new OnnxExportOptions()).Native();
            using (Reading()) Library.Check(NativeMethods.snn_model_export_onnx(m, ref o, p));
        }

        /// <summary>The bytes of the model's ONNX file.</summary>
        public byte[] ExportOnnx(OnnxExportOptions options = null)
        {
            var m = Live;
            var o = (options ?? new OnnxExportOptions()).Native();
            using (Reading())
            {
                UIntPtr size;
                Library.Check(NativeMethods.snn_model_export_onnx_to_buffer(m, ref o, null, UIntPtr.Zero, out size));
                var bytes = new byte[Library.Long(size)];
                Library.Check(NativeMethods.snn_model_export_onnx_to_buffer(m, ref o, bytes, size, out size));
                return bytes;
            }
        }

        /// <summary>The former form of Checkpoint.Load: the model is returned and
        /// the optimiser comes back through an out parameter, which cannot be
        /// declared in a using statement. Kept so that existing code compiles.</summary>
        [Obsolete("Use Checkpoint.Load(path), whose result holds the Model and the Optimiser and disposes both")]
        public static Model LoadCheckpoint(string path, out Optimiser optimiser)
        {
            var checkpoint = Checkpoint.Load(path);
            optimiser = checkpoint.Optimiser;
            return checkpoint.Model;
        }

        /// <summary>Saves the model atomically (a temporary file renamed over path).</summary>
        public void Save(string path)
        {
            var p = Library.Utf8z(path, "path");
            var m = Live;
            using (Reading()) Library.Check(NativeMethods.snn_model_save(m, p));
        }

        /// <summary>Saves the model and the optimiser's state atomically; Checkpoint.Load
        /// reads them back. A forward cache's dropout generator is not in the
        /// file: save its RngState beside it to resume a model with dropout bit
        /// for bit.</summary>
        public void SaveCheckpoint(Optimiser optimiser, string path)
        {
            var p = Library.Utf8z(path, "path");
            var m = Live;
            var o = optimiser.Live;
            using (Reading()) Library.Check(NativeMethods.snn_checkpoint_save(m, o, p));
        }

        /// <summary>SaveCheckpoint plus the loss scaling of `grads` when it is on (its
        /// settings, scale and good steps), so training with a GradScaler resumes where
        /// it was: Checkpoint.Load reads the file as any checkpoint and
        /// BackwardCache.LoadLossScaling gives a backward cache its scaling back.</summary>
        public void SaveCheckpoint(Optimiser optimiser, BackwardCache grads, string path)
        {
            var p = Library.Utf8z(path, "path");
            var m = Live;
            var o = optimiser.Live;
            var g = grads.Live;
            using (Reading()) Library.Check(NativeMethods.snn_checkpoint_save_v2(m, o, g, p));
        }

        /// <summary>The bytes of the model file, in memory.</summary>
        public byte[] ToBytes()
        {
            var m = Live;
            using (Reading())
            {
                UIntPtr size;
                Library.Check(NativeMethods.snn_model_save_to_buffer(m, null, UIntPtr.Zero, out size));
                var bytes = new byte[Library.Long(size)];
                Library.Check(NativeMethods.snn_model_save_to_buffer(m, bytes, size, out size));
                return bytes;
            }
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
        public int LayerCount
        {
            get
            {
                long n;
                Library.Check(NativeMethods.snn_model_layer_count(Live, out n));
                return Library.Int(n, "Model.LayerCount");
            }
        }

        /// <summary>The output shape of a layer as (channels, height, width).</summary>
        public int[] LayerShape(int layer)
        {
            long c, h, w;
            Library.Check(NativeMethods.snn_model_layer_shape(Live, layer, out c, out h, out w));
            return new[] { Library.Int(c, "Model.LayerShape: channels"), Library.Int(h, "Model.LayerShape: height"),
                           Library.Int(w, "Model.LayerShape: width") };
        }

        /// <summary>Where a layer's weights and bias lie in the parameter vector
        /// (offsets and counts are long, as ParameterCount).</summary>
        public LayerParams LayerParams(int layer)
        {
            UIntPtr wo, wc, bo, bc;
            Library.Check(NativeMethods.snn_model_layer_params(Live, layer, out wo, out wc, out bo, out bc));
            return new LayerParams {
                WeightOffset = Library.Long(wo), WeightCount = Library.Long(wc),
                BiasOffset = Library.Long(bo), BiasCount = Library.Long(bc) };
        }

        public LayerState LayerState(int layer)
        {
            UIntPtr offset, count;
            Library.Check(NativeMethods.snn_model_layer_state(Live, layer, out offset, out count));
            return new LayerState { Offset = Library.Long(offset), Count = Library.Long(count) };
        }

        /// <summary>The steps and vocabulary of a sequence input (both 0 for a
        /// model whose input is not a sequence).</summary>
        public SequenceInput InputSequence
        {
            get
            {
                long steps, vocab;
                Library.Check(NativeMethods.snn_model_input_sequence(Live, out steps, out vocab));
                return new SequenceInput { Steps = Library.Int(steps, "Model.InputSequence: steps"),
                                           Vocab = Library.Int(vocab, "Model.InputSequence: vocab") };
            }
        }

        /// <summary>Class labels per sample: T for an output sequence of T steps
        /// (one per step), else 1. A model with a sequence input keeps sequences
        /// (channels = features, height = steps, width 1) or ends in vectors.</summary>
        internal int LabelsPerSample
        {
            get
            {
                if (InputSequence.Steps == 0) return 1;
                var shape = LayerShape(LayerCount - 1);
                return shape[2] == 1 ? shape[1] : 1;
            }
        }

        /// <summary>Input features per sample (C*H*W for images, T*F for a
        /// sequence, T for token ids). An int, as the
        /// index of a span; a model whose sample exceeds int.MaxValue floats
        /// throws OverflowException here.</summary>
        public int InputSize
        {
            get { return Library.Int(InputSizeLong, "Model.InputSize"); }
        }

        internal long InputSizeLong
        {
            get { UIntPtr n; Library.Check(NativeMethods.snn_model_input_size(Live, out n)); return Library.Long(n); }
        }

        /// <summary>Outputs per sample, an int as InputSize.</summary>
        public int OutputSize
        {
            get { return Library.Int(OutputSizeLong, "Model.OutputSize"); }
        }

        internal long OutputSizeLong
        {
            get { UIntPtr n; Library.Check(NativeMethods.snn_model_output_size(Live, out n)); return Library.Long(n); }
        }

        /// <summary>The length of the parameter vector: a long, since a model on a
        /// GPU may hold more than int.MaxValue parameters (the span and array
        /// methods then throw; GPU interop still works).</summary>
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
        public void Init(ulong seed)
        {
            var m = Live;
            using (Writing()) Library.Check(NativeMethods.snn_model_init(m, seed));
        }

        /// <summary>A writable view of a CPU model's parameters, without a copy.
        /// It is valid until the model is disposed or moved to a GPU; reading it
        /// after that reads freed memory, so keep it in a local and do not
        /// hold it across those calls. On a GPU: Status.DeviceMismatch.</summary>
        public FloatView ParametersView()
        {
            IntPtr data;
            UIntPtr n;
            Library.Check(NativeMethods.snn_parameters(Live, out data, out n));
            return new FloatView(this, data, Library.SpanLength(n));
        }

        int viewVersion;
        int IViewOwner.ViewVersion { get { return Volatile.Read(ref viewVersion); } }
        string IViewOwner.ViewOwnerName { get { return "Snn.Model"; } }

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
            var m = Live;
            using (Reading())
            fixed (float* p = &MemoryMarshal.GetReference(dst))
                Library.Check(NativeMethods.snn_get_parameters(m, p, Library.Size(dst.Length)));
        }

        public unsafe void SetParameters(ReadOnlySpan<float> src)
        {
            var m = Live;
            using (Writing())
            fixed (float* p = &MemoryMarshal.GetReference(src))
                Library.Check(NativeMethods.snn_set_parameters(m, p, Library.Size(src.Length)));
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
            var m = Live;
            using (Reading())
            fixed (float* p = &MemoryMarshal.GetReference(dst))
                Library.Check(NativeMethods.snn_get_state(m, p, Library.Size(dst.Length)));
        }

        public unsafe void SetState(ReadOnlySpan<float> src)
        {
            var m = Live;
            using (Writing())
            fixed (float* p = &MemoryMarshal.GetReference(src))
                Library.Check(NativeMethods.snn_set_state(m, p, Library.Size(src.Length)));
        }

        /// <summary>Library.CpuDevice or the GPU index the model lives on.</summary>
        public int Device
        {
            get
            {
                var m = Live;
                int d;
                using (Reading()) Library.Check(NativeMethods.snn_model_device(m, out d));
                return d;
            }
        }

        /// <summary>Moves the model to GPU `device`; its caches and optimisers
        /// follow on their next use with it. Without a usable GPU this throws an
        /// SnnException whose Status says why, and the model stays where it was.</summary>
        public void ToGpu(int device)
        {
            var m = Live;
            Interlocked.Increment(ref viewVersion);
            using (Writing()) Library.Check(NativeMethods.snn_to_gpu(m, device));
        }

        public void ToCpu()
        {
            var m = Live;
            Interlocked.Increment(ref viewVersion);
            using (Writing()) Library.Check(NativeMethods.snn_to_cpu(m));
        }

        /// <summary>Moves the model to GPU 0 when one can be used; returns where it is.</summary>
        public int ToBestDevice()
        {
            var m = Live;
            int d;
            Interlocked.Increment(ref viewVersion);
            using (Writing()) Library.Check(NativeMethods.snn_to_best_device(m, out d));
            return d;
        }

        /// <summary>A forward cache for batches of 1 to maxBatch samples, in
        /// training mode: batchnorm uses the batch's statistics and updates the
        /// running ones, dropout drops. For inference use PreallocateInference
        /// (or set Training to false).</summary>
        public ForwardCache Preallocate(int maxBatch) { return new ForwardCache(this, maxBatch); }
        /// <summary>A forward cache in inference mode (Training false): batchnorm
        /// uses the running statistics, dropout passes its input through, and a
        /// pass only reads the model.</summary>
        public ForwardCache PreallocateInference(int maxBatch) { return Preallocate(maxBatch, CacheMode.Inference); }
        /// <summary>A forward cache in the mode given.</summary>
        public ForwardCache Preallocate(int maxBatch, CacheMode mode)
        {
            var cache = new ForwardCache(this, maxBatch);
            if (mode == CacheMode.Inference)
            {
                try { cache.Training = false; }
                catch { cache.Dispose(); throw; }
            }
            return cache;
        }

        /// <summary>Runs the model in inference mode on whole samples of inputs
        /// ([batch][InputSize]) and returns the outputs with their shape. It makes
        /// an inference cache for the call (an allocation); a loop that predicts
        /// every frame keeps a cache from PreallocateInference and calls its
        /// Predict instead.</summary>
        public Prediction Predict(ReadOnlySpan<float> inputs)
        {
            long size = InputSizeLong;
            if (size == 0 || inputs.Length % size != 0 || inputs.Length == 0)
                throw new SnnException(Status.Count, "Model.Predict: " + inputs.Length +
                    " floats are not a whole, non-zero number of samples of " + size);
            int batch = (int)(inputs.Length / size);
            using (var cache = PreallocateInference(batch))
            {
                var outputs = cache.Predict(inputs);
                var shape = LayerShape(LayerCount - 1);
                return new Prediction(outputs.ToArray(), batch, shape);
            }
        }
        /// <summary>A backward cache for batches of 1 to maxBatch samples.</summary>
        public BackwardCache PreallocateGrads(int maxBatch) { return new BackwardCache(this, maxBatch); }
        public Optimiser CreateOptimiser(OptimiserKind kind) { return new Optimiser(this, kind); }

        /// <summary>Disposes the model: every later call on it throws
        /// ObjectDisposedException. Its native memory (GPU memory included) is
        /// freed now, or when the last cache or optimiser made from it is disposed.</summary>
        public void Dispose()
        {
            disposed = true;
            Interlocked.Increment(ref viewVersion);
            Handle.Dispose();
        }

        public bool IsDisposed { get { return disposed; } }

        /// <summary>Whether the model has state (batchnorm's running statistics),
        /// which training-mode passes write.</summary>
        internal bool HasState { get { return hasState; } }

        /// <summary>Held by the calls that only read the model.</summary>
        internal ModelAccess Reading() { return new ModelAccess(access, false); }

        /// <summary>Held by the calls that write its parameters or state, alone.</summary>
        internal ModelAccess Writing() { return new ModelAccess(access, true); }

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

    /// <summary>A forward cache's dropout generator: the seed last set and the
    /// number of training passes since. It decides the masks of the next
    /// training pass, in any cache of a model with the same layers.</summary>
    public struct RngState
    {
        public ulong Seed, Passes;

        public RngState(ulong seed, ulong passes)
        {
            Seed = seed;
            Passes = passes;
        }

        public override string ToString() { return "seed " + Seed + ", " + Passes + " passes"; }
    }

    /// <summary>The buffers of forward passes of one model, for batches up to
    /// MaxBatch. A cache starts in training mode (batchnorm uses the batch's
    /// statistics and updates the model's state, dropout drops); set Training to
    /// false for inference.</summary>
    public sealed class ForwardCache : IDisposable, IViewOwner
    {
        internal readonly ForwardCacheHandle Handle;
        readonly long inputSize, outputSize;
        readonly bool tokens;
        volatile bool disposed;

        /// <summary>The model the cache was made for.</summary>
        public Model Model { get; private set; }

        internal ForwardCache(Model model, int maxBatch)
        {
            var m = model.Live;
            Model = model;
            inputSize = model.InputSizeLong;
            outputSize = model.OutputSizeLong;
            tokens = model.InputSequence.Vocab > 0;
            ForwardCacheHandle h;
            using (model.Reading()) Library.Check(NativeMethods.snn_preallocate(m, maxBatch, out h));
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

        /// <summary>The batch of the next Forward, 1..MaxBatch (SetInputs and SetTokens set it
        /// from the number of samples they are given).</summary>
        public int Batch
        {
            get { long b, m; Library.Check(NativeMethods.snn_cache_batch(Live, out b, out m)); return (int)b; }
            set
            {
                Interlocked.Increment(ref viewVersion);
                Library.Check(NativeMethods.snn_cache_set_batch(Live, value));
            }
        }

        /// <summary>The largest batch, given to Model.Preallocate.</summary>
        public int MaxBatch
        {
            get { long b, m; Library.Check(NativeMethods.snn_cache_batch(Live, out b, out m)); return (int)m; }
        }

        /// <summary>Training mode (true, the default) or inference mode (false):
        /// in inference, batchnorm uses the running statistics, dropout passes its
        /// input through and a forward pass only reads the model.</summary>
        public bool Training
        {
            get { int on; Library.Check(NativeMethods.snn_cache_training(Live, out on)); return on != 0; }
            set { Library.Check(NativeMethods.snn_cache_set_training(Live, value ? 1 : 0)); }
        }

        /// <summary>Inference rewrites (false for a new cache): an inference-mode float32
        /// pass on the CPU runs each batchnorm folded into the convolution or dense layer
        /// before it (and a relu after it in the same output pass), over a folded copy of
        /// the parameters the cache keeps and makes again when they change. Outputs match
        /// the plain pass within float32 rounding; backprop of a rewritten pass throws
        /// SnnException with Status.State. Turning them on allocates once.</summary>
        public bool InferenceRewrites
        {
            get { int on; Library.Check(NativeMethods.snn_cache_inference_rewrites(Live, out on)); return on != 0; }
            set { Library.Check(NativeMethods.snn_cache_set_inference_rewrites(Live, value ? 1 : 0)); }
        }

        /// <summary>The precision of the cache's passes (Float32 for a new cache).
        /// Setting it makes the layers' plans again (an allocation: set it before the
        /// training loop); a precision the cache's device cannot run, or that a layer
        /// has no kernels for there (the message names it), throws SnnException with
        /// Status.Unsupported and leaves the cache unchanged. The backward pass follows
        /// the precision of the forward pass it differentiates.</summary>
        public Precision Precision
        {
            get { int p; Library.Check(NativeMethods.snn_cache_precision(Live, out p)); return (Precision)p; }
            set
            {
                Interlocked.Increment(ref viewVersion);
                Library.Check(NativeMethods.snn_cache_set_precision(Live, (int)value));
            }
        }

        /// <summary>Seeds the dropout masks of the training passes that follow
        /// (they depend only on the seed and the number of passes since).</summary>
        public void SetSeed(ulong seed) { Library.Check(NativeMethods.snn_cache_set_seed(Live, seed)); }

        /// <summary>The dropout generator's state. Read it when saving a
        /// checkpoint and set it on the resumed run's cache, and the resumed
        /// training passes draw the masks the uninterrupted run would have
        /// drawn (inference passes do not count). Setting RngState(s, 0) is
        /// SetSeed(s).</summary>
        public RngState RngState
        {
            get
            {
                ulong seed, passes;
                Library.Check(NativeMethods.snn_cache_rng_state(Live, out seed, out passes));
                return new RngState(seed, passes);
            }
            set { Library.Check(NativeMethods.snn_cache_set_rng_state(Live, value.Seed, value.Passes)); }
        }

        // Sets the batch to the number of whole samples in `count` values, as
        // the library expects them in the call that follows (no allocation
        // unless it throws).
        void BatchFromCount(string what, long count, string values, string sampleUnit)
        {
            if (inputSize == 0 || count % inputSize != 0)
                throw new SnnException(Status.Count, what + ": " + count + values +
                    " are not a whole number of samples of " + inputSize + sampleUnit);
            long samples = count / inputSize, batch, max;
            Library.Check(NativeMethods.snn_cache_batch(Live, out batch, out max));
            if (samples < 1 || samples > max)
                throw new SnnException(Status.Batch, what + ": " + count + values + " hold " + samples +
                    " samples; the cache takes 1 to " + max);
            if (samples != batch)
            {
                Interlocked.Increment(ref viewVersion);
                Library.Check(NativeMethods.snn_cache_set_batch(Live, samples));
            }
        }

        /// <summary>Copies whole samples of inputs, [batch][features] ([batch][T][F]
        /// for "input seq TxF"): the batch becomes inputs.Length / InputSize (a
        /// short last batch needs no Batch setting of its own), and every length
        /// resets to T. A length that is not a whole number of samples is
        /// Status.Count, more samples than MaxBatch (or none) Status.Batch.</summary>
        public unsafe void SetInputs(ReadOnlySpan<float> inputs)
        {
            if (!tokens) BatchFromCount("SetInputs", inputs.Length, " floats", "");
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

        /// <summary>Gathers samples of a data set on the cache's device by index. A
        /// token data set (Dataset.Tokens) feeds a model of token ids (an id
        /// outside its vocabulary is Status.Token) and sets the gathered
        /// samples' lengths when it has them, else every length is T.</summary>
        public unsafe void SetInputsFromDataset(Dataset dataset, ReadOnlySpan<long> indices)
        {
            var cache = Live;
            var data = dataset.Live;
            fixed (long* i = &MemoryMarshal.GetReference(indices))
                Library.Check(NativeMethods.snn_set_inputs_from_dataset(cache, data, i, Library.Size(indices.Length)));
        }

        /// <summary>Copies whole samples of T token ids, [batch][T], into a cache
        /// of a model whose input is "input tokens T vocab=V" (as SetInputs, the
        /// batch becomes ids.Length / T), and resets every length to T. An id
        /// outside [0, V) is Status.Token, naming the sample, step and id, and
        /// nothing is copied; a model of floats gives Status.Unsupported.</summary>
        public unsafe void SetTokens(ReadOnlySpan<int> ids)
        {
            if (tokens) BatchFromCount("SetTokens", ids.Length, " ids", " steps");
            fixed (int* p = &MemoryMarshal.GetReference(ids))
                Library.Check(NativeMethods.snn_set_tokens(Live, p, Library.Size(ids.Length)));
        }

        /// <summary>Gathers rows of T ids by index; the batch becomes
        /// indices.Length and every length T. ids must hold whole samples.</summary>
        public unsafe void SetTokensGather(ReadOnlySpan<int> ids, ReadOnlySpan<long> indices)
        {
            // A model of floats: the library refuses the ids, naming its input.
            long samples = ids.Length;
            if (tokens)
            {
                if (inputSize == 0 || ids.Length % inputSize != 0)
                    throw new SnnException(Status.Count, "SetTokensGather: " + ids.Length +
                        " ids are not a whole number of samples of " + inputSize + " steps");
                samples = ids.Length / inputSize;
            }
            fixed (int* t = &MemoryMarshal.GetReference(ids))
            fixed (long* i = &MemoryMarshal.GetReference(indices))
                Library.Check(NativeMethods.snn_set_tokens_gather(Live, t, Library.Size(samples), i,
                                                                  Library.Size(indices.Length)));
        }

        /// <summary>The valid steps of each sample of the inputs or tokens set
        /// last, one per sample, each in [1, T]: sample s holds steps
        /// [0, lengths[s]) and padding after, which recurrent layers, attention,
        /// sequence pooling and the label losses leave out. Setting inputs or
        /// tokens resets every length to T: set the lengths after them. A length
        /// outside [1, T] is Status.InvalidArgument, a count other than the
        /// batch Status.Count, a model whose input is not a sequence (or whose
        /// layers change the steps) Status.Unsupported, no inputs set
        /// Status.State.</summary>
        public unsafe void SetLengths(ReadOnlySpan<int> lengths)
        {
            fixed (int* p = &MemoryMarshal.GetReference(lengths))
                Library.Check(NativeMethods.snn_set_lengths(Live, p, Library.Size(lengths.Length)));
        }

        /// <summary>Length i becomes lengths[indices[i]], for samples gathered
        /// with the same indices.</summary>
        public unsafe void SetLengthsGather(ReadOnlySpan<int> lengths, ReadOnlySpan<long> indices)
        {
            fixed (int* l = &MemoryMarshal.GetReference(lengths))
            fixed (long* i = &MemoryMarshal.GetReference(indices))
                Library.Check(NativeMethods.snn_set_lengths_gather(Live, l, Library.Size(lengths.Length), i,
                                                                   Library.Size(indices.Length)));
        }

        /// <summary>GPU interop: copies count floats that already live in memory of
        /// the cache's GPU (a device pointer from CUDA code), device to device.
        /// A CPU cache gives Status.DeviceMismatch.</summary>
        public void SetInputsDevice(IntPtr deviceInputs, long count)
        {
            Library.Check(NativeMethods.snn_set_inputs_device(Live, deviceInputs, Library.Size(count)));
        }

        /// <summary>Runs the model on the cache's inputs (ObjectDisposedException
        /// when the model was disposed). Other threads may run the model at
        /// the same time with their own caches; a training-mode pass of a model
        /// with state (batchnorm), which updates the running statistics, waits
        /// for the others and runs alone (see Model).</summary>
        public void Forward()
        {
            var cache = Live;
            var m = Model.Live;
            Interlocked.Increment(ref viewVersion);
            using (Model.HasState && Training ? Model.Writing() : Model.Reading())
                Library.Check(NativeMethods.snn_forward(cache, m));
        }

        /// <summary>SetInputs, Forward and OutputsView in one call: the outputs
        /// of these inputs, [Batch][SampleSize], as a checked view valid until
        /// the next Forward. Allocates nothing (a per-frame call); the mode is
        /// the cache's (PreallocateInference for inference).</summary>
        public ReadOnlyFloatView Predict(ReadOnlySpan<float> inputs)
        {
            SetInputs(inputs);
            Forward();
            return OutputsView();
        }

        /// <summary>A read-only view of a CPU cache's outputs, [batch][outputs],
        /// without a copy. It is valid until the next Forward or the cache's
        /// disposal: a read after either throws (InvalidOperationException,
        /// ObjectDisposedException) instead of returning other or freed memory.
        /// Its Span is the raw span, unchecked after it is taken. On a GPU:
        /// Status.DeviceMismatch (use GetOutputs).</summary>
        public ReadOnlyFloatView OutputsView()
        {
            IntPtr data;
            UIntPtr n;
            var cache = Live;
            Library.Check(NativeMethods.snn_outputs(cache, out data, out n));
            int length = Library.SpanLength(n);
            long b, max;
            Library.Check(NativeMethods.snn_cache_batch(cache, out b, out max));
            return new ReadOnlyFloatView(this, data, length, (int)b);
        }

        int viewVersion;
        int IViewOwner.ViewVersion { get { return Volatile.Read(ref viewVersion); } }
        string IViewOwner.ViewOwnerName { get { return "Snn.ForwardCache"; } }

        /// <summary>The outputs, [batch][outputs], copied into a new array (any device).</summary>
        public float[] GetOutputs()
        {
            var dst = new float[Library.Int(Batch * outputSize, "ForwardCache.GetOutputs: batch x outputs")];
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
    public sealed class BackwardCache : IDisposable, IViewOwner
    {
        internal readonly BackwardCacheHandle Handle;
        readonly long parameterCount;
        readonly int labelsPerSample;
        volatile bool disposed;

        /// <summary>The model the cache was made for.</summary>
        public Model Model { get; private set; }

        internal BackwardCache(Model model, int maxBatch)
        {
            var m = model.Live;
            Model = model;
            parameterCount = model.ParameterCount;
            labelsPerSample = model.LabelsPerSample;
            BackwardCacheHandle h;
            using (model.Reading()) Library.Check(NativeMethods.snn_preallocate_grads(m, maxBatch, out h));
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

        /// <summary>0-based class labels for Loss.LogitCrossEntropy, one per sample.
        /// For a model whose output is a sequence of T steps of K values, one
        /// label per step: [batch][T], batch * T labels, each in [0, K) or -1 to
        /// ignore the step; the loss is the mean over the steps counted, which
        /// leave out the -1 steps and the padded steps of samples given lengths
        /// (ForwardCache.SetLengths), as PyTorch's ignore_index does (0 when none
        /// is left). A count that is not a multiple of T is Status.Count, a label
        /// outside [0, K) other than a step's -1 Status.Label.</summary>
        public unsafe void SetLabels(ReadOnlySpan<int> labels)
        {
            fixed (int* p = &MemoryMarshal.GetReference(labels))
                Library.Check(NativeMethods.snn_set_labels(Live, p, Library.Size(labels.Length)));
        }

        /// <summary>Label i becomes labels[indices[i]]; for a sequence output of T
        /// steps, labels holds T per sample and sample i's are the T from
        /// labels[indices[i] * T].</summary>
        public unsafe void SetLabelsGather(ReadOnlySpan<int> labels, ReadOnlySpan<long> indices)
        {
            if (labels.Length % labelsPerSample != 0)
                throw new SnnException(Status.Count, "SetLabelsGather: " + labels.Length +
                    " labels are not a whole number of samples of " + labelsPerSample + " steps");
            fixed (int* l = &MemoryMarshal.GetReference(labels))
            fixed (long* i = &MemoryMarshal.GetReference(indices))
                Library.Check(NativeMethods.snn_set_labels_gather(Live, l, Library.Size(labels.Length / labelsPerSample),
                                                                  i, Library.Size(indices.Length)));
        }

        public unsafe void SetLabelsFromDataset(Dataset dataset, ReadOnlySpan<long> indices)
        {
            var cache = Live;
            var data = dataset.Live;
            fixed (long* i = &MemoryMarshal.GetReference(indices))
                Library.Check(NativeMethods.snn_set_labels_from_dataset(cache, data, i, Library.Size(indices.Length)));
        }

        /// <summary>Turns dynamic loss scaling on with PyTorch's defaults
        /// (LossScaling.Default) unless it is on already, or off (forgetting its state).
        /// Works at every precision and on every device.</summary>
        public void SetLossScaling(bool on)
        {
            Library.Check(NativeMethods.snn_set_loss_scaling(Live, on ? 1 : 0));
        }

        /// <summary>The loss scaling of the next backprop. Setting a value with On turns
        /// scaling on with its Scale, factors, GrowthInterval and GoodSteps (a value out
        /// of range throws SnnException with Status.InvalidArgument naming it, nothing
        /// changed; Skipped is ignored); setting one without On turns scaling off.</summary>
        public LossScaling LossScaling
        {
            get
            {
                int on, skipped;
                double scale, growth, backoff;
                long interval, good;
                Library.Check(NativeMethods.snn_loss_scaling_state(Live, out on, out scale, out growth, out backoff,
                                                                   out interval, out good, out skipped));
                return new LossScaling { On = on != 0, Scale = scale, GrowthFactor = growth, BackoffFactor = backoff,
                                         GrowthInterval = interval, GoodSteps = good, Skipped = skipped != 0 };
            }
            set
            {
                if (!value.On)
                    Library.Check(NativeMethods.snn_set_loss_scaling(Live, 0));
                else
                    Library.Check(NativeMethods.snn_set_loss_scaling_state(Live, value.Scale, value.GrowthFactor,
                                                                           value.BackoffFactor, value.GrowthInterval,
                                                                           value.GoodSteps));
            }
        }

        /// <summary>Sets the loss scaling to that of a checkpoint written by
        /// Model.SaveCheckpoint(optimiser, grads, path): on with its settings and state,
        /// or off when the file holds none. Errors as Checkpoint.Load; the cache is
        /// unchanged on failure.</summary>
        public void LoadLossScaling(string path)
        {
            var p = Library.Utf8z(path, "path");
            Library.Check(NativeMethods.snn_checkpoint_load_loss_scaling(p, Live));
        }

        /// <summary>With enabled, backprops also compute the gradient with respect to the inputs.</summary>
        public void SetInputGradient(bool enabled)
        {
            Library.Check(NativeMethods.snn_set_input_gradient(Live, enabled ? 1 : 0));
        }

        /// <summary>Sets the parameter of a loss that has one for this cache's backprops
        /// with it; a loss without one, or a value outside its range (NaN and infinities
        /// included), throws SnnException with Status.InvalidArgument.</summary>
        public void SetLossParameter(Loss loss, double value)
        {
            Library.Check(NativeMethods.snn_set_loss_parameter(Live, (int)loss, value));
        }

        /// <summary>The parameter of a loss on this cache: its default until set.</summary>
        public double LossParameter(Loss loss)
        {
            double v;
            Library.Check(NativeMethods.snn_get_loss_parameter(Live, (int)loss, out v));
            return v;
        }

        /// <summary>The loss of fwd's last forward pass and its gradient with
        /// respect to every parameter; returns the loss.</summary>
        public float Backprop(ForwardCache fwd, Loss loss)
        {
            var bwd = Live;
            var f = fwd.Live;
            var m = Model.Live;
            float value;
            using (Model.Reading()) Library.Check(NativeMethods.snn_backprop(bwd, f, m, (int)loss, out value));
            return value;
        }

        /// <summary>Backpropagates a caller-supplied gradient of the loss with
        /// respect to the outputs, [batch][outputs] (custom losses, RL).</summary>
        public unsafe void BackpropWithOutputGradient(ForwardCache fwd, ReadOnlySpan<float> outputGradient)
        {
            var bwd = Live;
            var f = fwd.Live;
            var m = Model.Live;
            using (Model.Reading())
            fixed (float* p = &MemoryMarshal.GetReference(outputGradient))
                Library.Check(NativeMethods.snn_backprop_with_output_gradient(bwd, f, m, p,
                                                                              Library.Size(outputGradient.Length)));
        }

        /// <summary>A read-only view of a CPU cache's gradient, without a copy; valid
        /// until the cache is disposed: a read after that throws
        /// ObjectDisposedException. On a GPU: Status.DeviceMismatch.</summary>
        public ReadOnlyFloatView GradientsView()
        {
            IntPtr data;
            UIntPtr n;
            Library.Check(NativeMethods.snn_gradients(Live, out data, out n));
            return new ReadOnlyFloatView(this, data, Library.SpanLength(n), 1);
        }

        int viewVersion;
        int IViewOwner.ViewVersion { get { return Volatile.Read(ref viewVersion); } }
        string IViewOwner.ViewOwnerName { get { return "Snn.BackwardCache"; } }

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
            using (model.Reading()) Library.Check(NativeMethods.snn_optimiser_create(m, (int)kind, out h));
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

        /// <summary>Updates the parameters of the optimiser's model (Model) from
        /// the gradient in grads. Like Forward and Backprop, which take the model
        /// from their caches, it takes the model from the optimiser, which
        /// belongs to one model from its creation. It waits for the passes of
        /// the model under way on other threads and runs alone (see Model);
        /// ObjectDisposedException when the model was disposed.</summary>
        public void Step(BackwardCache grads) { StepOn(Model, grads); }

        /// <summary>The former form of Step(grads). Passing the model again can
        /// only repeat the optimiser's own model or name another, which the
        /// library refuses (Status.ModelMismatch); the form is kept, with that
        /// behaviour, so that existing code compiles.</summary>
        [Obsolete("An optimiser knows its model: call Step(grads)")]
        public void Step(Model model, BackwardCache grads) { StepOn(model, grads); }

        void StepOn(Model model, BackwardCache grads)
        {
            var o = Live;
            var g = grads.Live;
            var m = model.Live;
            using (model.Writing()) Library.Check(NativeMethods.snn_optimiser_step(o, m, g));
        }

        /// <summary>Zeroes the moments and the step count.</summary>
        public void Reset() { Library.Check(NativeMethods.snn_optimiser_reset(Live)); }

        /// <summary>The L2 norm of the whole gradient at the last step, before
        /// clipping (Hyperparameter.MaxGradNorm &gt; 0); waits for that step on a
        /// GPU. Throws with Status.State when the last step did not clip.</summary>
        public double GradNorm
        {
            get { double n; Library.Check(NativeMethods.snn_optimiser_grad_norm(Live, out n)); return n; }
        }

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

    /// <summary>A training checkpoint read back: a CPU model and its optimiser
    /// (kind, settings, step count, moments), from which training continues
    /// bit-identically. Dispose disposes both; they may also be disposed one
    /// by one, and either may outlive the Checkpoint.</summary>
    public sealed class Checkpoint : IDisposable
    {
        // See Library's static constructor: the first use of the class loads
        // the library from a package layout, before its methods are compiled.
        static Checkpoint()
        {
#if !NET5_0_OR_GREATER
            NativeLibraryName.Preload();
#endif
        }

        public Model Model { get; private set; }
        public Optimiser Optimiser { get; private set; }

        Checkpoint(Model model, Optimiser optimiser)
        {
            Model = model;
            Optimiser = optimiser;
        }

        /// <summary>Loads a file written by Model.SaveCheckpoint:
        /// `using (var run = Checkpoint.Load(path)) { ... run.Optimiser.Step(grads); }`.
        /// A failed load throws (SnnException with Status.Io, FileFormat, ...;
        /// ArgumentException for a NUL in path) and leaves nothing to dispose.</summary>
        public static Checkpoint Load(string path)
        {
            return LoadCalls(path);   // see Library.Calls
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static Checkpoint LoadCalls(string path)
        {
            var p = Library.Utf8z(path, "path");
            Library.CheckVersion();
            ModelHandle m;
            OptimiserHandle o;
            Library.Check(NativeMethods.snn_checkpoint_load(p, out m, out o));
            try
            {
                o.Own(m);
                var model = Model.Wrap(m);
                return new Checkpoint(model, new Optimiser(model, o));
            }
            catch
            {
                o.Dispose();
                m.Dispose();
                throw;
            }
        }

        public void Dispose()
        {
            Optimiser.Dispose();
            Model.Dispose();
        }
    }

    /// <summary>A data set copied once to a device (Library.CpuDevice or a GPU),
    /// from which batches are gathered by index.</summary>
    public sealed class Dataset : IDisposable
    {
        // See Library's static constructor: the first use of the class loads
        // the library from a package layout, before its methods are compiled.
        static Dataset()
        {
#if !NET5_0_OR_GREATER
            NativeLibraryName.Preload();
#endif
        }

        internal readonly DatasetHandle Handle;
        volatile bool disposed;

        public int SampleCount { get; private set; }
        /// <summary>Floats per sample, or ids per sample (the steps) for a token data set.</summary>
        public int Features { get; private set; }
        public int Device { get; private set; }

        /// <summary>samples holds whole samples of `features` floats; labels is
        /// empty (or null) or holds one 0-based label per sample.</summary>
        public unsafe Dataset(int device, ReadOnlySpan<float> samples, int features, ReadOnlySpan<int> labels)
        {
            if (features < 1) throw new ArgumentOutOfRangeException("features", features, "must be at least 1");
            if (samples.Length % features != 0)
                throw new SnnException(Status.Count, "Dataset: " + samples.Length +
                    " floats are not a whole number of samples of " + features);
            int count = samples.Length / features;
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

        Dataset(DatasetHandle handle, int device, int count, int steps)
        {
            Handle = handle;
            SampleCount = count;
            Features = steps;
            Device = device;
        }

        /// <summary>A data set of token ids: ids holds whole samples of `steps`
        /// ids (each in [0, 2^24]; a negative one is Status.Token, and a model's
        /// vocabulary is checked when batches are gathered); lengths is empty
        /// (every sample has `steps` steps) or one length in [1, steps] per
        /// sample, gathered with the ids by ForwardCache.SetInputsFromDataset;
        /// labels is empty, one 0-based label per sample, or one per step
        /// (steps per sample, -1 ignoring a step) for a sequence output.</summary>
        public static unsafe Dataset Tokens(int device, ReadOnlySpan<int> ids, int steps, ReadOnlySpan<int> lengths,
                                            ReadOnlySpan<int> labels)
        {
            return TokensCalls(device, ids, steps, lengths, labels);   // see Library.Calls
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static unsafe Dataset TokensCalls(int device, ReadOnlySpan<int> ids, int steps, ReadOnlySpan<int> lengths,
                                            ReadOnlySpan<int> labels)
        {
            if (steps < 1) throw new ArgumentOutOfRangeException("steps", steps, "must be at least 1");
            if (ids.Length % steps != 0)
                throw new SnnException(Status.Count, "Dataset.Tokens: " + ids.Length +
                    " ids are not a whole number of samples of " + steps + " steps");
            int count = ids.Length / steps;
            if (!lengths.IsEmpty && lengths.Length != count)
                throw new SnnException(Status.Count, "Dataset.Tokens: " + lengths.Length + " lengths for " + count +
                    " samples");
            long perSample = labels.IsEmpty || labels.Length == count ? 1 : steps;
            if (!labels.IsEmpty && labels.Length != count * perSample)
                throw new SnnException(Status.Count, "Dataset.Tokens: " + labels.Length + " labels for " + count +
                    " samples of " + steps + " steps (one per sample or one per step)");
            Library.CheckVersion();
            DatasetHandle h;
            fixed (int* t = &MemoryMarshal.GetReference(ids))
            fixed (int* n = &MemoryMarshal.GetReference(lengths))
            fixed (int* l = &MemoryMarshal.GetReference(labels))
                Library.Check(NativeMethods.snn_dataset_create_tokens(device, t, Library.Size(count), Library.Size(steps),
                                                                      lengths.IsEmpty ? null : n,
                                                                      labels.IsEmpty ? null : l,
                                                                      Library.Size(perSample), out h));
            return new Dataset(h, device, count, steps);
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
