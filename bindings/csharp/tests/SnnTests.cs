// NUnit tests of the C# binding: the getting-started sine example trains to
// its stated loss, a CNN runs forwards and backwards, span views and copies
// agree, failures become SnnExceptions, disposing frees the native memory and
// handles may be disposed (or finalized) in any order.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Threading;
using NUnit.Framework;
using Snn;

namespace Snn.Tests
{
    [TestFixture]
    public class SineExample
    {
        [Test]
        public void AdamFitsASine()
        {
            const int N = 512;
            var x = new float[N];
            var y = new float[N];
            for (int i = 0; i < N; i++)
            {
                x[i] = (float)(2.0 * Math.PI * i / (N - 1));
                y[i] = (float)Math.Sin(x[i]);
            }
            using (var model = new Model("input 1; dense 10 tanh; dense 10 sigmoid; dense 1"))
            using (var fwd = model.Preallocate(N))
            using (var bwd = model.PreallocateGrads(N))
            using (var adam = model.CreateOptimiser(OptimiserKind.Adam))
            {
                model.Init(42);
                adam.Set(Hyperparameter.LearningRate, 0.01);
                fwd.SetInputs(x);
                bwd.SetTargets(y);
                float first = 0;
                for (int epoch = 0; epoch < 3000; epoch++)
                {
                    fwd.Forward();
                    float loss = bwd.Backprop(fwd, Loss.Mse);
                    if (epoch == 0) first = loss;
                    adam.Step(bwd);
                }
                Assert.AreEqual(3000, adam.StepCount);
                fwd.Forward();
                float[] output = fwd.GetOutputs();
                Assert.AreEqual(N, output.Length);
                double mse = 0;
                for (int i = 0; i < N; i++) mse += (output[i] - y[i]) * (output[i] - y[i]);
                mse /= N;
                Assert.Less(mse, 1e-3, "final MSE");
                Assert.Less(mse, first / 100.0);
            }
        }
    }

    [TestFixture]
    public class Calls
    {
        /// <summary>A model, its caches and its SGD optimiser, with one batch set.</summary>
        sealed class Run : IDisposable
        {
            public readonly Model Model = new Model("input 3; dense 2");
            public readonly ForwardCache Fwd;
            public readonly BackwardCache Bwd;
            public readonly Optimiser Sgd;

            public Run()
            {
                Fwd = Model.Preallocate(2);
                Bwd = Model.PreallocateGrads(2);
                Sgd = Model.CreateOptimiser(OptimiserKind.Sgd);
                Sgd.Set(Hyperparameter.LearningRate, 0.1);
                Fwd.SetInputs(new float[] { 1, 2, 3, -1, 0, 2 });
                Bwd.SetTargets(new float[] { 1, 0, 0, 1 });
            }

            public void Dispose()
            {
                Sgd.Dispose();
                Bwd.Dispose();
                Fwd.Dispose();
                Model.Dispose();
            }
        }

#pragma warning disable 618  // the obsolete Step(model, grads), which must keep working
        [Test]
        public void StepTakesTheOptimisersModelAsTheOldFormDid()
        {
            using (var a = new Run())
            using (var b = new Run())
            using (var other = new Model("input 3; dense 2"))
            {
                float[] initial = a.Model.GetParameters();
                for (int i = 0; i < 3; i++)
                {
                    a.Fwd.Forward();
                    a.Bwd.Backprop(a.Fwd, Loss.Mse);
                    a.Sgd.Step(a.Bwd);
                    b.Fwd.Forward();
                    b.Bwd.Backprop(b.Fwd, Loss.Mse);
                    b.Sgd.Step(b.Model, b.Bwd);
                }
                Assert.AreEqual(3, a.Sgd.StepCount);
                Assert.AreNotEqual(Bits.Of(initial), Bits.Of(a.Model.GetParameters()));
                Assert.AreEqual(Bits.Of(b.Model.GetParameters()), Bits.Of(a.Model.GetParameters()));
                var e = Assert.Throws<SnnException>(() => a.Sgd.Step(other, a.Bwd));
                Assert.AreEqual(Status.ModelMismatch, e.Status);
                StringAssert.Contains("snn_optimiser_step", e.Message);
                Assert.AreEqual(3, a.Sgd.StepCount);
            }
        }
#pragma warning restore 618

        [Test]
        public void SizesThatIndexSpansAreInts()
        {
            using (var model = new Model("input 4x4x2; conv 3 3 pad=1; flatten; dense 5"))
            using (var fwd = model.Preallocate(3))
            {
                int inputs = model.InputSize, outputs = model.OutputSize, layers = model.LayerCount;
                int batch = fwd.Batch, maxBatch = fwd.MaxBatch;
                int[] shape = model.LayerShape(layers - 1);
                Assert.AreEqual(32, inputs);
                Assert.AreEqual(new[] { 5, 1, 1 }, shape);
                Assert.AreEqual(3, batch);
                Assert.AreEqual(3, maxBatch);
                fwd.SetInputs(new float[batch * inputs]);
                fwd.Forward();
                ReadOnlyFloatView y = fwd.OutputsView();
                Assert.AreEqual(batch, y.Batch);
                Assert.AreEqual(outputs, y.SampleSize);
                Assert.AreEqual(batch * outputs, y.Length);
                Assert.AreEqual(y[(batch - 1) * outputs], fwd.GetOutputs()[(batch - 1) * outputs]);
                long parameters = model.ParameterCount;
                Assert.AreEqual(2 * 9 * 3 + 3 + 48 * 5 + 5, parameters);
                using (var data = new Dataset(Library.CpuDevice, new float[6 * inputs], inputs, null))
                {
                    int samples = data.SampleCount, features = data.Features;
                    Assert.AreEqual(6, samples);
                    Assert.AreEqual(32, features);
                }
            }
        }

        [Test]
        public void ASizeBeyondAnIntIsAnOverflowExceptionNamingIt()
        {
            using (var model = new Model("input 32768x65536x1; globalavgpool"))
            {
                var e = Assert.Throws<OverflowException>(() => model.InputSize.ToString());
                StringAssert.Contains("Model.InputSize is 2147483648", e.Message);
                Assert.AreEqual(1, model.OutputSize);
                Assert.AreEqual(new[] { 1, 1, 1 }, model.LayerShape(1));
            }
        }
    }

    [TestFixture]
    public class Cnn
    {
        const string Spec = "input 8x8x1; conv 3x3 4 relu; maxpool 2; flatten; dense 3";

        static float[] Images(int batch)
        {
            var x = new float[batch * 64];
            for (int i = 0; i < x.Length; i++) x[i] = (i * 37 % 101) / 101f - 0.5f;
            return x;
        }

        [Test]
        public void ShapesFollowTheSpec()
        {
            using (var model = new Model(Spec))
            {
                Assert.AreEqual(5, model.LayerCount);
                Assert.AreEqual(new[] { 4, 6, 6 }, model.LayerShape(1));
                Assert.AreEqual(new[] { 4, 3, 3 }, model.LayerShape(2));
                Assert.AreEqual(64, model.InputSize);
                Assert.AreEqual(3, model.OutputSize);
                Assert.AreEqual(4 * 9 + 4 + 36 * 3 + 3, model.ParameterCount);
                var dense = model.LayerParams(4);
                Assert.AreEqual(40, dense.WeightOffset);
                Assert.AreEqual(108, dense.WeightCount);
                Assert.AreEqual(148, dense.BiasOffset);
                using (var again = new Model(model.Describe()))
                    Assert.AreEqual(model.Describe(), again.Describe());
            }
        }

        [Test]
        public void SgdLowersTheCrossEntropy()
        {
            using (var model = new Model(Spec))
            using (var fwd = model.Preallocate(4))
            using (var bwd = model.PreallocateGrads(4))
            using (var sgd = model.CreateOptimiser(OptimiserKind.Sgd))
            {
                model.Init(3);
                sgd.Set(Hyperparameter.LearningRate, 0.1);
                fwd.SetInputs(Images(4));
                bwd.SetLabels(new[] { 0, 1, 2, 1 });
                var losses = new float[20];
                for (int i = 0; i < 20; i++)
                {
                    fwd.Forward();
                    losses[i] = bwd.Backprop(fwd, Loss.LogitCrossEntropy);
                    sgd.Step(bwd);
                }
                for (int i = 1; i < 20; i++) Assert.Less(losses[i], losses[i - 1]);
                Assert.Less(losses[19], 0.7f * losses[0]);
                Assert.AreEqual(model.ParameterCount, bwd.GetGradients().Length);
            }
        }

        [Test]
        public void SpanViewsAndCopiesAgree()
        {
            using (var model = new Model(Spec))
            using (var fwd = model.Preallocate(2))
            using (var bwd = model.PreallocateGrads(2))
            {
                var images = Images(5);
                fwd.SetInputsGather(images, new long[] { 4, 1 });
                Assert.AreEqual(2, fwd.Batch);
                Assert.AreEqual(2, fwd.MaxBatch);
                fwd.Forward();
                float[] copied = fwd.GetOutputs();
                ReadOnlySpan<float> outputs = fwd.OutputsView().Span;   // the raw span
                Assert.AreEqual(copied, outputs.ToArray());

                // A slice of an array is a span: sample 4 alone, without a copy.
                fwd.Batch = 1;
                fwd.SetInputs(new ReadOnlySpan<float>(images, 4 * 64, 64));
                fwd.Forward();
                var first = new float[4];
                fwd.GetOutputs(new Span<float>(first, 1, 3));
                Assert.AreEqual(copied.Take(3).ToArray(), first.Skip(1).ToArray());

                // Writing through the parameter view changes the model at once.
                FloatView view = model.ParametersView();
                Assert.AreEqual(model.ParameterCount, view.Length);
                var parameters = model.GetParameters();
                parameters[0] = 0.25f;
                model.SetParameters(parameters);
                Assert.AreEqual(0.25f, view[0]);
                view[1] = -3f;
                Assert.AreEqual(-3f, model.GetParameters()[1]);

                bwd.SetLabels(new[] { 2 });
                fwd.Forward();
                bwd.Backprop(fwd, Loss.LogitCrossEntropy);
                Assert.AreEqual(bwd.GetGradients(), bwd.GradientsView().ToArray());
            }
        }
    }

    [TestFixture]
    public class Errors
    {
        [Test]
        public void ABadSpecThrowsWithTheLibrarysMessage()
        {
            var e = Assert.Throws<SnnException>(() => new Model("input 4; dense banana"));
            Assert.AreEqual(Status.Spec, e.Status);
            StringAssert.Contains("snn_model_create", e.Message);
        }

        [Test]
        public void ASpecBeyondTheHeaderLimitsThrowsASpecError()
        {
            Assert.AreEqual(100000, Library.MaxLayers);
            Assert.AreEqual(4194304, Library.MaxSpecLength);
            var e = Assert.Throws<SnnException>(() => new Model(new string(' ', Library.MaxSpecLength + 1)));
            Assert.AreEqual(Status.Spec, e.Status);
            StringAssert.Contains(Library.MaxSpecLength.ToString(), e.Message);
            var layers = new System.Text.StringBuilder("input 1");
            for (int i = 0; i <= Library.MaxLayers; i++) layers.Append(";relu");
            e = Assert.Throws<SnnException>(() => new Model(layers.ToString()));
            Assert.AreEqual(Status.Spec, e.Status);
            StringAssert.Contains(Library.MaxLayers.ToString(), e.Message);
        }

        [Test]
        public void SetInputsTakesTheBatchFromTheSpan()
        {
            using (var model = new Model("input 4; dense 3"))
            using (var fwd = model.Preallocate(4))
            {
                var x = new float[16];
                for (int i = 0; i < x.Length; i++) x[i] = 0.25f * i - 1.0f;
                fwd.SetInputs(x);
                Assert.AreEqual(4, fwd.Batch);
                fwd.Forward();
                var full = fwd.GetOutputs();
                // a short last batch: the first two samples alone give their rows
                fwd.SetInputs(new ReadOnlySpan<float>(x, 0, 8));
                Assert.AreEqual(2, fwd.Batch);
                fwd.Forward();
                var two = fwd.GetOutputs();
                Assert.AreEqual(6, two.Length);
                for (int i = 0; i < two.Length; i++) Assert.AreEqual(full[i], two[i]);
                Assert.AreEqual(Status.Batch, Assert.Throws<SnnException>(() => fwd.SetInputs(new float[20])).Status);
                Assert.AreEqual(Status.Batch, Assert.Throws<SnnException>(() => fwd.SetInputs(new float[0])).Status);
                var e = Assert.Throws<SnnException>(() => fwd.SetInputs(new float[7]));
                Assert.AreEqual(Status.Count, e.Status);
                StringAssert.Contains("7 floats are not a whole number of samples of 4", e.Message);
                Assert.AreEqual(2, fwd.Batch);
            }
            using (var model = new Model("input tokens 4 vocab=10; embedding 8; dense 3"))
            using (var fwd = model.Preallocate(3))
            {
                fwd.SetTokens(new[] { 1, 2, 3, 4 });
                Assert.AreEqual(1, fwd.Batch);
                fwd.Forward();
                Assert.AreEqual(12, fwd.GetOutputs().Length);
                fwd.SetTokens(new[] { 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2 });
                Assert.AreEqual(3, fwd.Batch);
                Assert.AreEqual(Status.Batch, Assert.Throws<SnnException>(() => fwd.SetTokens(new int[16])).Status);
            }
        }

        [Test]
        public void WrongCountsOrderAndLabels()
        {
            using (var model = new Model("input 3; dense 2"))
            using (var fwd = model.Preallocate(2))
            using (var bwd = model.PreallocateGrads(2))
            {
                Assert.AreEqual(Status.Count, Assert.Throws<SnnException>(() => fwd.SetInputs(new float[5])).Status);
                Assert.AreEqual(Status.State, Assert.Throws<SnnException>(() => fwd.Forward()).Status);
                Assert.AreEqual(Status.Batch, Assert.Throws<SnnException>(() => fwd.Batch = 3).Status);
                Assert.AreEqual(Status.Label, Assert.Throws<SnnException>(() => bwd.SetLabels(new[] { 0, 2 })).Status);
            }
        }

        [Test]
        public void AnotherModelsCacheIsRefused()
        {
            using (var a = new Model("input 3; dense 2"))
            using (var b = new Model("input 3; dense 2"))
            using (var fwd = a.Preallocate(1))
            using (var bwd = b.PreallocateGrads(1))
            {
                fwd.SetInputs(new float[] { 1, 2, 3 });
                fwd.Forward();
                bwd.SetTargets(new float[] { 0, 0 });
                var e = Assert.Throws<SnnException>(() => bwd.Backprop(fwd, Loss.Mse));
                Assert.AreEqual(Status.ModelMismatch, e.Status);
            }
        }

        [Test]
        public void WithoutAGpuRequestsFailCleanly()
        {
            using (var model = new Model("input 2; dense 1"))
            {
                if (Library.GpuCount == 0)
                {
                    var e = Assert.Throws<SnnException>(() => model.ToGpu(0));
                    Assert.AreEqual(Library.GpuStatus(0), e.Status);
                    Assert.AreEqual(Library.CpuDevice, model.ToBestDevice());
                }
                model.ToCpu();
                Assert.AreEqual(Library.CpuDevice, model.Device);
            }
        }

        [Test]
        public void AMissingFileIsAnIoError()
        {
            var e = Assert.Throws<SnnException>(() => Model.Load("/nonexistent/dir/model.safetensors"));
            Assert.AreEqual(Status.Io, e.Status);
        }

        [Test]
        public void FailuresReachTheLogCallback()
        {
            string seen = null;
            Library.SetLogCallback((level, message) => { if (level == LogLevel.Error) seen = message; });
            try
            {
                Assert.Throws<SnnException>(() => Library.NumThreads = 0);
                StringAssert.Contains("snn_set_num_threads", seen);
            }
            finally
            {
                Library.SetLogCallback(null);
            }
        }

        [Test]
        public void VersionAndFeatures()
        {
            Assert.AreEqual(0, Library.VersionNumber / 1000000);
            StringAssert.StartsWith("0.", Library.VersionString);
            Assert.IsTrue(Library.HasFeature("cpu"));
            Assert.AreEqual("unknown status", Library.StatusString((Status)99));
        }
    }

    [TestFixture]
    public class Disposal
    {
        static long ResidentBytes()
        {
            foreach (var line in File.ReadAllLines("/proc/self/status"))
                if (line.StartsWith("VmRSS:"))
                    return long.Parse(line.Split(new[] { ' ', '\t' }, StringSplitOptions.RemoveEmptyEntries)[1]) * 1024;
            throw new InvalidOperationException("no VmRSS in /proc/self/status");
        }

        static void Cycles(int n)
        {
            for (int i = 0; i < n; i++)
            {
                using (var model = new Model("input 64; dense 256 relu; dense 10"))
                using (var fwd = model.Preallocate(16))
                using (var bwd = model.PreallocateGrads(16))
                using (var opt = model.CreateOptimiser(OptimiserKind.Adam))
                {
                }
            }
        }

        [Test]
        public void TenThousandCreateDisposeCyclesDoNotGrowTheProcess()
        {
            // Each cycle allocates about 0.4 MB natively (model, caches, Adam moments);
            // leaking them would grow the process by gigabytes.
            Cycles(500);
            long before = ResidentBytes();
            Cycles(10000);
            long growth = ResidentBytes() - before;
            Assert.Less(growth, 32L << 20, "RSS grew by " + growth + " bytes");
        }

        [Test]
        public void DisposedHandlesAreClosedAndDoubleDisposeIsHarmless()
        {
            var model = new Model("input 2; dense 1");
            model.Dispose();
            model.Dispose();
            Assert.Throws<ObjectDisposedException>(() => model.Init(1));
        }
    }

    [TestFixture]
    public class Lifetimes
    {
        const string Spec = "input 6x6x1; conv 3x3 2 relu; maxpool 2; flatten; dense 3";

        static float[] Images()
        {
            var x = new float[72];
            for (int i = 0; i < x.Length; i++) x[i] = ((i * 7 % 13) - 6f) / 6f;
            return x;
        }

        /// <summary>A model, its caches and an Adam optimiser after one step.</summary>
        sealed class Trained
        {
            public readonly Model Model = new Model(Spec);
            public readonly ForwardCache Fwd;
            public readonly BackwardCache Bwd;
            public readonly Optimiser Opt;
            public readonly float[] Outputs, Gradients, Parameters;

            public Trained()
            {
                Model.Init(5);
                Fwd = Model.Preallocate(2);
                Bwd = Model.PreallocateGrads(2);
                Opt = Model.CreateOptimiser(OptimiserKind.Adam);
                Opt.Set(Hyperparameter.LearningRate, 0.05);
                Fwd.SetInputs(Images());
                Bwd.SetLabels(new[] { 0, 2 });
                Fwd.Forward();
                Assert.Greater(Bwd.Backprop(Fwd, Loss.LogitCrossEntropy), 0f);
                Opt.Step(Bwd);
                Fwd.Forward();
                Outputs = Fwd.GetOutputs();
                Gradients = Bwd.GetGradients();
                Parameters = Model.GetParameters();
                Assert.AreEqual(6, Outputs.Length);
                Assert.IsTrue(Gradients.Any(g => g != 0f));
            }

            public IDisposable[] Handles { get { return new IDisposable[] { Model, Fwd, Bwd, Opt }; } }

            /// <summary>Every handle not yet disposed answers with what it held;
            /// a call that needs a disposed handle throws ObjectDisposedException.</summary>
            public void CheckSurvivors(HashSet<IDisposable> disposed)
            {
                bool model = !disposed.Contains(Model), fwd = !disposed.Contains(Fwd),
                     bwd = !disposed.Contains(Bwd), opt = !disposed.Contains(Opt);
                if (model)
                    Assert.AreEqual(Parameters, Model.GetParameters());
                if (fwd)
                {
                    Assert.AreEqual(2, Fwd.Batch);
                    Assert.AreEqual(Outputs, Fwd.GetOutputs());
                    if (model)
                    {
                        Fwd.Forward();
                        Assert.AreEqual(Outputs, Fwd.GetOutputs());
                    }
                    else
                        Assert.Throws<ObjectDisposedException>(() => Fwd.Forward());
                }
                if (bwd)
                {
                    Assert.AreEqual(Gradients, Bwd.GetGradients());
                    if (!model || !fwd)
                        Assert.Throws<ObjectDisposedException>(() => Bwd.Backprop(Fwd, Loss.LogitCrossEntropy));
                }
                if (opt)
                {
                    Assert.AreEqual(1, Opt.StepCount);
                    Assert.AreEqual(0.05, Opt.Get(Hyperparameter.LearningRate));
                    if (!model || !bwd)
                        Assert.Throws<ObjectDisposedException>(() => Opt.Step(Bwd));
                    Assert.AreEqual(1, Opt.StepCount);
                }
            }
        }

        static IEnumerable<int[]> Permutations(int n)
        {
            if (n == 0)
            {
                yield return new int[0];
                yield break;
            }
            foreach (var rest in Permutations(n - 1))
                for (int at = 0; at <= rest.Length; at++)
                {
                    var p = new List<int>(rest);
                    p.Insert(at, n - 1);
                    yield return p.ToArray();
                }
        }

        [Test]
        public void EveryDisposalOrderOfModelCachesAndOptimiserIsSafe()
        {
            int orders = 0;
            foreach (var order in Permutations(4))
            {
                var t = new Trained();
                var handles = t.Handles;
                var disposed = new HashSet<IDisposable>();
                foreach (int i in order)
                {
                    handles[i].Dispose();
                    disposed.Add(handles[i]);
                    t.CheckSurvivors(disposed);
                }
                orders++;
            }
            Assert.AreEqual(24, orders);
        }

        [Test]
        public void ACacheAnswersAfterItsModelIsDisposed()
        {
            var t = new Trained();
            t.Model.Dispose();
            Assert.IsTrue(t.Model.IsDisposed);
            var e = Assert.Throws<ObjectDisposedException>(() => t.Fwd.Forward());
            StringAssert.Contains("model was disposed", e.Message);
            Assert.AreEqual(t.Outputs, t.Fwd.GetOutputs());
            t.Fwd.SetInputsGather(Images(), new long[] { 1 });
            Assert.AreEqual(1, t.Fwd.Batch);
            Assert.AreEqual(Status.Count, Assert.Throws<SnnException>(() => t.Fwd.SetInputs(new float[35])).Status);
            t.Bwd.SetLabels(new[] { 1 });
            t.Bwd.SetGradients(new float[t.Gradients.Length]);
            Assert.AreEqual(new float[t.Gradients.Length], t.Bwd.GetGradients());
            t.Opt.Reset();
            Assert.AreEqual(0, t.Opt.StepCount);
            foreach (var h in t.Handles) h.Dispose();
        }

        [Test]
        public void ADisposedHandlePassedWithLiveOnesLeavesThemDisposable()
        {
            var t = new Trained();
            t.Fwd.Dispose();
            var e = Assert.Throws<ObjectDisposedException>(() => t.Bwd.Backprop(t.Fwd, Loss.LogitCrossEntropy));
            StringAssert.Contains("forward cache was disposed", e.Message);
            t.Bwd.Dispose();
            Assert.Throws<ObjectDisposedException>(() => t.Bwd.GetGradients());
            t.Model.Dispose();
            Assert.Throws<ObjectDisposedException>(() => t.Opt.Step(t.Bwd));
            t.Opt.Dispose();
            Assert.Throws<ObjectDisposedException>(() => t.Opt.Reset());
        }

        static void Abandon(int sets)
        {
            for (int i = 0; i < sets; i++)
            {
                var t = new Trained();
                GC.KeepAlive(t);
            }
        }

        [Test]
        public void HandlesLeftToTheFinalizersAreFreedInAnyOrder()
        {
            for (int round = 0; round < 5; round++)
            {
                Abandon(40);
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            var t = new Trained();
            t.CheckSurvivors(new HashSet<IDisposable>());
            foreach (var h in t.Handles) h.Dispose();
        }
    }
}
