// One model run from several threads, each with its own caches: the model's
// read-write lock serialises what writes the model (training passes of a
// model with batchnorm, which update its running statistics; optimiser steps)
// with what reads it, so the results are those of some serial order.
using System;
using System.Linq;
using System.Threading;
using NUnit.Framework;
using Snn;

namespace Snn.Tests
{
    [TestFixture]
    public class Threads
    {
        // Many channels, so that a pass spends its time on the running statistics,
        // and a small momentum, so that they move at every one of the passes.
        const string Batchnorm = "input 4096; batchnorm momentum=0.001";
        const int Batch = 2, Workers = 4, PassesEach = 150;

        static float[] Inputs()
        {
            var x = new float[Batch * 4096];
            for (int i = 0; i < x.Length; i++) x[i] = (i * 29 % 113) / 113f + (i % 4096) * 1e-3f;
            return x;
        }

        /// <summary>Runs body(worker) on Workers threads started together; rethrows
        /// the first exception a worker threw.</summary>
        static void OnThreads(Action<int> body)
        {
            var start = new Barrier(Workers);
            Exception failure = null;
            var threads = Enumerable.Range(0, Workers).Select(w => new Thread(() =>
            {
                try
                {
                    start.SignalAndWait();
                    body(w);
                }
                catch (Exception e)
                {
                    Interlocked.CompareExchange(ref failure, e, null);
                }
            })).ToArray();
            foreach (var t in threads) t.Start();
            foreach (var t in threads) t.Join();
            if (failure != null) throw new AssertionException("a worker threw: " + failure);
        }

        /// <summary>Every pass sees the same batch, so each updates the running
        /// statistics by the same map, running = 0.9 running + 0.1 batch, and any
        /// serial order of the passes ends in the same bits.</summary>
        [Test]
        public void ConcurrentTrainingPassesUpdateTheRunningStatisticsAsSerialPassesDo()
        {
            var x = Inputs();
            float[] serial;
            int threadsBefore = Library.NumThreads;
            // One library thread: each pass updates the statistics on its caller's
            // thread, so unserialised passes would overlap there. The serial passes
            // run with the same thread count, as snn.h promises the same bits only
            // for a fixed count.
            Library.NumThreads = 1;
            try
            {
                using (var model = new Model(Batchnorm))
                using (var fwd = model.Preallocate(Batch))
                {
                    fwd.SetInputs(x);
                    for (int i = 0; i < Workers * PassesEach; i++) fwd.Forward();
                    serial = model.GetState();
                }
                Assert.AreEqual((float)(Workers * PassesEach), serial[2 * 4096], "num_batches_tracked");

                for (int round = 0; round < 10; round++)
                    using (var model = new Model(Batchnorm))
                    {
                        var caches = Enumerable.Range(0, Workers).Select(_ => model.Preallocate(Batch)).ToArray();
                        foreach (var c in caches) c.SetInputs(x);
                        OnThreads(w =>
                        {
                            for (int i = 0; i < PassesEach; i++) caches[w].Forward();
                        });
                        foreach (var c in caches) c.Dispose();
                        float[] state = model.GetState();
                        Assert.AreEqual(serial[2 * 4096], state[2 * 4096], "num_batches_tracked, round " + round);
                        Assert.AreEqual(Bits.Of(serial), Bits.Of(state), "running statistics, round " + round);
                    }
            }
            finally
            {
                Library.NumThreads = threadsBefore;
            }
        }

        /// <summary>Inference passes only read: they run together, beside the
        /// training passes of another thread, and see running statistics that
        /// no training pass has half written.</summary>
        [Test]
        public void InferencePassesBesideTrainingPassesSeeWholeUpdates()
        {
            var x = Inputs();
            using (var model = new Model(Batchnorm))
            using (var train = model.Preallocate(Batch))
            {
                train.SetInputs(x);
                // Outputs of inference after k training passes, k = 0..PassesEach.
                var expected = new float[PassesEach + 1][];
                using (var reference = new Model(Batchnorm))
                using (var t = reference.Preallocate(Batch))
                using (var infer = reference.Preallocate(Batch))
                {
                    t.SetInputs(x);
                    infer.SetInputs(x);
                    infer.Training = false;
                    for (int k = 0; k <= PassesEach; k++)
                    {
                        infer.Forward();
                        expected[k] = infer.GetOutputs();
                        t.Forward();
                    }
                }
                var keys = expected.Select(o => string.Join(",", Bits.Of(o))).ToList();
                OnThreads(w =>
                {
                    if (w == 0)
                    {
                        for (int i = 0; i < PassesEach; i++) train.Forward();
                        return;
                    }
                    using (var infer = model.Preallocate(Batch))
                    {
                        infer.SetInputs(x);
                        infer.Training = false;
                        for (int i = 0; i < PassesEach; i++)
                        {
                            infer.Forward();
                            int k = keys.IndexOf(string.Join(",", Bits.Of(infer.GetOutputs())));
                            if (k < 0) throw new Exception("pass " + i + " saw running statistics between two updates");
                        }
                    }
                });
                Assert.AreEqual((float)PassesEach, model.GetState()[2 * 4096]);
            }
        }

        /// <summary>Optimiser steps on one thread while others run inference:
        /// every pass sees the parameters of a whole number of steps.</summary>
        [Test]
        public void InferencePassesBesideOptimiserStepsSeeWholeSteps()
        {
            // Enough parameters that a step and a pass take a while.
            const string Spec = "input 256; dense 1024 tanh; dense 4";
            const int Steps = 150;
            var x = Enumerable.Range(0, 256 * Batch).Select(i => (i * 17 % 31) / 31f - 0.5f).ToArray();
            var targets = Enumerable.Range(0, 4 * Batch).Select(i => (float)(i % 3)).ToArray();
            Func<Model, float[]> infer = m =>
            {
                using (var f = m.Preallocate(Batch))
                {
                    f.Training = false;
                    f.SetInputs(x);
                    f.Forward();
                    return f.GetOutputs();
                }
            };
            using (var model = new Model(Spec))
            using (var reference = new Model(Spec))
            using (var fwd = model.Preallocate(Batch))
            using (var bwd = model.PreallocateGrads(Batch))
            using (var sgd = model.CreateOptimiser(OptimiserKind.Sgd))
            {
                sgd.Set(Hyperparameter.LearningRate, 0.01);
                fwd.SetInputs(x);
                bwd.SetTargets(targets);
                fwd.Forward();
                bwd.Backprop(fwd, Loss.Mse);
                // One gradient, stepped Steps times: the parameters after k steps.
                var keys = new System.Collections.Generic.List<string>();
                using (var rsgd = reference.CreateOptimiser(OptimiserKind.Sgd))
                {
                    rsgd.Set(Hyperparameter.LearningRate, 0.01);
                    using (var rbwd = reference.PreallocateGrads(Batch))
                    {
                        rbwd.SetGradients(bwd.GetGradients());
                        for (int k = 0; k <= Steps; k++)
                        {
                            keys.Add(string.Join(",", Bits.Of(infer(reference))));
                            rsgd.Step(rbwd);
                        }
                    }
                }
                OnThreads(w =>
                {
                    if (w == 0)
                    {
                        for (int k = 0; k < Steps; k++) sgd.Step(bwd);
                        return;
                    }
                    using (var f = model.Preallocate(Batch))
                    {
                        f.Training = false;
                        f.SetInputs(x);
                        for (int i = 0; i < Steps; i++)
                        {
                            f.Forward();
                            if (!keys.Contains(string.Join(",", Bits.Of(f.GetOutputs()))))
                                throw new Exception("pass " + i + " saw parameters between two steps");
                        }
                    }
                });
                Assert.AreEqual(keys[Steps], string.Join(",", Bits.Of(infer(model))));
            }
        }
    }
}
