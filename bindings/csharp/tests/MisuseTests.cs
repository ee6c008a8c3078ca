// Misuse gives an exception, never a crash or a silent surprise: a NUL in a
// string, buffers of the wrong size, a disposed model used through its caches,
// a log receiver that throws, GPU functions on a machine without a GPU.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;
using NUnit.Framework;
using Snn;

namespace Snn.Tests
{
    [TestFixture]
    public class Strings
    {
        [Test]
        public void ANulInASpecIsAnArgumentExceptionNotACutSpec()
        {
            // Cut at the NUL, the spec would be "input 4", a valid model.
            var e = Assert.Throws<ArgumentException>(() => new Model("input 4\0; dense 2"));
            Assert.AreEqual("spec", e.ParamName);
            StringAssert.Contains("NUL character at index 7", e.Message);
            Assert.Throws<ArgumentNullException>(() => new Model(null));
            Assert.Throws<ArgumentException>(() => Library.HasFeature("cpu\0gpu"));
        }

        [Test]
        public void ANulInAPathIsAnArgumentExceptionAndWritesNothing()
        {
            using (var dir = new TempDir())
            using (var model = new Model("input 3; dense 2"))
            using (var adam = model.CreateOptimiser(OptimiserKind.Adam))
            {
                string cut = dir.File("model.safetensors");
                string path = cut + "\0.bak";
                Assert.AreEqual("path", Assert.Throws<ArgumentException>(() => model.Save(path)).ParamName);
                Assert.Throws<ArgumentException>(() => model.SaveCheckpoint(adam, path));
                Assert.IsFalse(File.Exists(cut));
                Assert.AreEqual(0, Directory.GetFiles(dir.Path).Length);
                model.Save(cut);
                Assert.Throws<ArgumentException>(() => Model.Load(path));
                Assert.Throws<ArgumentException>(() => Checkpoint.Load(path));
            }
        }

        [Test]
        public void ALoneSurrogateIsAnArgumentException()
        {
            Assert.Throws<ArgumentException>(() => new Model("input 4; dense 2 \ud800"));
        }
    }

    [TestFixture]
    public class Sizes
    {
        static void Expect(Status status, TestDelegate call)
        {
            Assert.AreEqual(status, Assert.Throws<SnnException>(call).Status);
        }

        [Test]
        public void BuffersOfTheWrongSizeThrowWithTheLibrarysStatus()
        {
            using (var model = new Model("input 3; dense 2"))
            using (var fwd = model.Preallocate(2))
            using (var bwd = model.PreallocateGrads(2))
            {
                long n = model.ParameterCount;
                Expect(Status.Count, () => fwd.SetInputs(new float[5]));
                Expect(Status.Count, () => model.SetParameters(new float[n - 1]));
                Expect(Status.Count, () => model.GetParameters(new float[n + 1]));
                Expect(Status.Count, () => model.SetState(new float[1]));
                Expect(Status.Count, () => bwd.SetTargets(new float[3]));
                Expect(Status.Count, () => bwd.SetGradients(new float[n - 1]));
                Expect(Status.Count, () => fwd.SetInputsGather(new float[7], new long[] { 0 }));
                Expect(Status.InvalidArgument, () => fwd.SetInputsGather(new float[6], new long[] { 2 }));
                Expect(Status.Batch, () => fwd.SetInputsGather(new float[9], new long[] { 0, 1, 2 }));
                Expect(Status.Batch, () => fwd.Batch = 0);
                Expect(Status.Batch, () => model.Preallocate(0));
                Expect(Status.Label, () => bwd.SetLabels(new[] { 0, 2 }));
                Expect(Status.InvalidArgument, () => bwd.SetLossParameter(Loss.Mse, 1.0));
                Expect(Status.InvalidArgument, () => bwd.LossParameter(Loss.LogitCrossEntropy));
                Assert.AreEqual(1.0, bwd.LossParameter(Loss.Huber));
                Expect(Status.InvalidArgument, () => bwd.SetLossParameter(Loss.Huber, 0.0));
                Expect(Status.InvalidArgument, () => bwd.SetLossParameter(Loss.Huber, double.NaN));
                bwd.SetLossParameter(Loss.Huber, 0.25);
                Assert.AreEqual(0.25, bwd.LossParameter(Loss.Huber));
                Expect(Status.InvalidArgument, () => bwd.SetLossParameter(Loss.SmoothL1, -1.0));
                bwd.SetLossParameter(Loss.SmoothL1, 0.0);
                Assert.AreEqual(0.0, bwd.LossParameter(Loss.SmoothL1));
                Expect(Status.InvalidArgument, () => bwd.SetLossParameter(Loss.BceWithLogits, 1.0));
                fwd.SetInputs(new float[6]);
                fwd.Forward();
                Expect(Status.Count, () => fwd.GetOutputs(new float[3]));
                Expect(Status.Count, () => bwd.BackpropWithOutputGradient(fwd, new float[3]));
                Expect(Status.State, () => bwd.GetInputGradients(new float[6]));
                Assert.Throws<ArgumentOutOfRangeException>(() => new Dataset(Library.CpuDevice, new float[4], 0, null));
                Assert.AreEqual(0, model.GetState().Length, "a model without batchnorm has no state");
                // Nothing was changed by the failed calls.
                Assert.AreEqual(2, fwd.Batch);
                Assert.AreEqual(n, model.GetParameters().Length);
            }
        }

        [Test]
        public void ClippingReportsTheGradientNorm()
        {
            using (var model = new Model("input 1; dense 1"))
            using (var bwd = model.PreallocateGrads(1))
            using (var sgd = model.CreateOptimiser(OptimiserKind.Sgd))
            {
                Expect(Status.State, () => { var n = sgd.GradNorm; });
                sgd.Set(Hyperparameter.MaxGradNorm, 1.0);
                bwd.SetGradients(new float[] { 3, 4 });
                sgd.Step(bwd);
                Assert.AreEqual(5.0, sgd.GradNorm);
            }
        }

        [Test]
        public void InputGradientsArriveWhenAskedFor()
        {
            using (var model = new Model("input 3; dense 2"))
            using (var fwd = model.Preallocate(2))
            using (var bwd = model.PreallocateGrads(2))
            {
                var weights = new float[] { 1, 2, 3, 4, 5, 6, 0, 0 };
                model.SetParameters(weights);
                bwd.SetInputGradient(true);
                fwd.SetInputs(new float[] { 1, 0, 0, 0, 1, 0 });
                fwd.Forward();
                // d(sum of outputs)/d(input) = the column sums of W.
                bwd.BackpropWithOutputGradient(fwd, new float[] { 1, 1, 1, 1 });
                var dx = new float[6];
                bwd.GetInputGradients(dx);
                Assert.AreEqual(new float[] { 5, 7, 9, 5, 7, 9 }, dx);
            }
        }
    }

    [TestFixture]
    public class Owners
    {
        [Test]
        public void ADisposedModelStaysAllocatedUntilItsLastCacheAndOptimiserGo()
        {
            var model = new Model("input 3; dense 2");
            var fwd = model.Preallocate(1);
            var bwd = model.PreallocateGrads(1);
            var adam = model.CreateOptimiser(OptimiserKind.Adam);
            fwd.SetInputs(new float[] { 1, 2, 3 });
            fwd.Forward();
            float[] outputs = fwd.GetOutputs();

            model.Dispose();
            Assert.IsTrue(model.IsDisposed);
            Assert.IsFalse(model.Handle.IsClosed, "the caches hold the model's native handle");
            var e = Assert.Throws<ObjectDisposedException>(() => fwd.Forward());
            StringAssert.Contains("model was disposed", e.Message);
            Assert.Throws<ObjectDisposedException>(() => model.GetParameters());
            Assert.Throws<ObjectDisposedException>(() => model.Preallocate(1));
            Assert.Throws<ObjectDisposedException>(() => adam.Step(bwd));
            Assert.AreEqual(outputs, fwd.GetOutputs(), "the cache answers the calls that take only it");

            fwd.Dispose();
            bwd.Dispose();
            Assert.IsFalse(model.Handle.IsClosed);
            adam.Dispose();
            Assert.IsTrue(model.Handle.IsClosed, "the last owner released the model");
            Assert.IsTrue(fwd.Handle.IsClosed && bwd.Handle.IsClosed && adam.Handle.IsClosed);
            Assert.Throws<ObjectDisposedException>(() => fwd.GetOutputs());
        }

        [Test]
        public void ACheckpointsOptimiserOwnsItsModel()
        {
            using (var dir = new TempDir())
            {
                string path = dir.File("c.ckpt");
                using (var model = new Model("input 3; dense 2"))
                using (var adam = model.CreateOptimiser(OptimiserKind.Adam))
                    model.SaveCheckpoint(adam, path);
                var run = Checkpoint.Load(path);
                Model m = run.Model;
                Optimiser loaded = run.Optimiser;
                Assert.AreSame(m, loaded.Model);
                m.Dispose();
                Assert.IsFalse(m.Handle.IsClosed);
                Assert.AreEqual(0, loaded.StepCount);
                loaded.Dispose();
                Assert.IsTrue(m.Handle.IsClosed);
            }
        }

        static ForwardCache AbandonedModelsCache()
        {
            var model = new Model("input 3; dense 2");
            var cache = model.Preallocate(1);
            cache.SetInputs(new float[] { 1, 2, 3 });
            cache.Forward();
            return cache;
        }

        [Test]
        public void FinalizingTheModelsHandleFirstLeavesTheCacheWorking()
        {
            for (int round = 0; round < 20; round++)
            {
                var cache = AbandonedModelsCache();
                Assert.AreEqual(2, cache.GetOutputs().Length);
                cache = null;
                // The model, its handle and the cache are garbage now; whichever
                // finalizer runs first, the native model outlives the native cache.
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            var survivor = AbandonedModelsCache();
            Assert.AreEqual(2, survivor.GetOutputs().Length);
            survivor.Dispose();
        }
    }

    [TestFixture]
    public class LogReceiver
    {
        static SnnException FailingCall()
        {
            return Assert.Throws<SnnException>(() => Library.NumThreads = 0);
        }

        /// <summary>Runs f on another thread; fails instead of hanging when it
        /// has not finished within 30 s (a deadlock).</summary>
        static void Within30s(Action f)
        {
            Exception failure = null;
            var thread = new Thread(() => { try { f(); } catch (Exception e) { failure = e; } });
            thread.IsBackground = true;
            thread.Start();
            Assert.IsTrue(thread.Join(TimeSpan.FromSeconds(30)), "the calls did not finish: deadlock");
            if (failure != null) throw failure;
        }

        [Test]
        public void AThrowingReceiversExceptionIsTheInnerExceptionOfTheFailingCall()
        {
            try
            {
                Library.SetLogCallback((level, message) =>
                {
                    throw new InvalidOperationException("the receiver refused: " + message);
                });
                var e = FailingCall();
                Assert.AreEqual(Status.InvalidArgument, e.Status);
                StringAssert.StartsWith("snn_set_num_threads", e.Message);
                Assert.IsInstanceOf<InvalidOperationException>(e.InnerException);
                Assert.AreEqual("the receiver refused: " + e.Message, e.InnerException.Message);
                Assert.IsNull(Library.TakeLogCallbackException(), "nothing else was recorded");

                // A call whose failure is a return value, not an exception, has
                // nothing to attach the receiver's exception to: it is recorded.
                Assert.AreNotEqual(Status.Ok, Library.GpuStatus(1000));
                var recorded = Library.TakeLogCallbackException();
                Assert.IsInstanceOf<InvalidOperationException>(recorded);
                StringAssert.Contains("snn_gpu_status", recorded.Message);
                Assert.IsNull(Library.TakeLogCallbackException(), "taking it cleared it");

                // A call that succeeds afterwards carries nothing over.
                Library.NumThreads = Library.NumThreads;
                using (var model = new Model("input 2; dense 1"))
                    Assert.AreEqual(Status.Count,
                        Assert.Throws<SnnException>(() => model.SetParameters(new float[1])).Status);
            }
            finally
            {
                Library.SetLogCallback(null);
            }
            Assert.IsNull(FailingCall().InnerException);
        }

        [Test]
        public void AThrowingReceiverNeitherDeadlocksNorCrossesThreads()
        {
            int failed = 0, attached = 0;
            var seen = new List<string>();
            try
            {
                Library.SetLogCallback((level, message) =>
                {
                    throw new InvalidOperationException(Thread.CurrentThread.ManagedThreadId.ToString());
                });
                Within30s(() =>
                {
                    var threads = Enumerable.Range(0, 5).Select(_ => new Thread(() =>
                    {
                        for (int i = 0; i < 50; i++)
                        {
                            var e = FailingCall();
                            Interlocked.Increment(ref failed);
                            // Each call gets what the receiver threw on its own thread.
                            if (e.InnerException.Message == Thread.CurrentThread.ManagedThreadId.ToString())
                                Interlocked.Increment(ref attached);
                        }
                    })).ToList();
                    threads.ForEach(t => t.Start());
                    threads.ForEach(t => t.Join());
                });
                Assert.AreEqual(250, failed);
                Assert.AreEqual(250, attached);

                // The receiver can be replaced and logging goes on.
                Library.SetLogCallback((level, message) => { lock (seen) seen.Add(message); });
                string expected = null;
                Within30s(() => expected = FailingCall().Message);
                Assert.AreEqual(new[] { expected }, seen.ToArray());
            }
            finally
            {
                Library.SetLogCallback(null);
            }
            FailingCall();
            Assert.AreEqual(1, seen.Count);
        }
    }

    [TestFixture]
    public class Gpu
    {
        /// <summary>Without a GPU: every GPU request fails with the reason. With
        /// one: the model moves and the gradient's device pointer is reachable.</summary>
        [Test]
        public void GpuFunctionsAndTheirInterop()
        {
            if (Library.GpuCount == 0)
                WithoutAGpu();
            else
                OnGpu0();
        }

        static void WithoutAGpu()
        {
            Status why = Library.GpuStatus(0);
            Assert.That(why, Is.EqualTo(Status.GpuPluginNotFound).Or.EqualTo(Status.GpuDriver).Or.EqualTo(Status.NoGpu));
            Assert.AreEqual(why, Assert.Throws<SnnException>(() => Library.RequireGpu(0)).Status);
            using (var model = new Model("input 2; dense 1"))
            using (var fwd = model.Preallocate(1))
            using (var bwd = model.PreallocateGrads(1))
            {
                var e = Assert.Throws<SnnException>(() => model.ToGpu(0));
                Assert.AreEqual(why, e.Status);
                Assert.IsNotEmpty(e.Message);
                Assert.AreEqual(Library.CpuDevice, model.ToBestDevice());
                Assert.AreEqual(Library.CpuDevice, model.Device);
                Assert.AreEqual(why, Assert.Throws<SnnException>(
                    () => new Dataset(0, new float[2], 2, null)).Status);
                Assert.AreEqual(why, Assert.Throws<SnnException>(
                    () => Dataset.Tokens(0, new[] { 1, 2 }, 2, new[] { 1 }, null)).Status);

                // The interop functions refuse CPU memory with DeviceMismatch.
                long count;
                Assert.AreEqual(Status.DeviceMismatch, Assert.Throws<SnnException>(
                    () => bwd.GradientsDevice(out count)).Status);
                Assert.AreEqual(Status.DeviceMismatch, Assert.Throws<SnnException>(
                    () => fwd.SetInputsDevice(new IntPtr(1), 2)).Status);
                bwd.Synchronize();
                Library.SetAllowTf32(false);
            }
        }

        static void OnGpu0()
        {
            using (var model = new Model("input 2; dense 1"))
            using (var fwd = model.Preallocate(1))
            using (var bwd = model.PreallocateGrads(1))
            {
                model.ToGpu(0);
                Assert.AreEqual(0, model.Device);
                fwd.SetInputs(new float[] { 1, 2 });
                fwd.Forward();
                bwd.SetTargets(new float[] { 0 });
                bwd.Backprop(fwd, Loss.Mse);
                bwd.Synchronize();
                long count;
                Assert.AreNotEqual(IntPtr.Zero, bwd.GradientsDevice(out count));
                Assert.AreEqual(model.ParameterCount, count);
                Assert.AreEqual(Status.DeviceMismatch, Assert.Throws<SnnException>(() => model.ParametersView()).Status);
            }
        }
    }
}
