// Model files, checkpoints and data sets from C#: a saved model loads back
// identical, training resumed from a checkpoint continues bit for bit, and a
// data set read from a file trains a classifier through the library's
// gather-by-index functions.
using System;
using System.Globalization;
using System.IO;
using System.Linq;
using NUnit.Framework;
using Snn;

namespace Snn.Tests
{
    /// <summary>A fresh directory under the system's temporary directory, removed on Dispose.</summary>
    sealed class TempDir : IDisposable
    {
        public readonly string Path = System.IO.Path.Combine(System.IO.Path.GetTempPath(),
                                                             "snn-cs-" + Guid.NewGuid().ToString("N"));
        public TempDir() { Directory.CreateDirectory(Path); }
        public string File(string name) { return System.IO.Path.Combine(Path, name); }
        public void Dispose() { Directory.Delete(Path, true); }
    }

    static class Bits
    {
        /// <summary>The bit patterns of floats, so that equality means bit for bit.</summary>
        public static int[] Of(float[] values)
        {
            return values.Select(v => BitConverter.ToInt32(BitConverter.GetBytes(v), 0)).ToArray();
        }
    }

    [TestFixture]
    public class ModelFiles
    {
        /// <summary>A residual model after a few Adam steps, so that its parameters
        /// and its state (running statistics) are no longer the initial ones.</summary>
        static Model Trained(int steps)
        {
            var model = new Model(Graph.Residual);
            using (var fwd = model.Preallocate(6))
            using (var bwd = model.PreallocateGrads(6))
            using (var adam = model.CreateOptimiser(OptimiserKind.Adam))
            {
                fwd.SetInputs(Graph.Images(6));
                bwd.SetLabels(Graph.Labels(6));
                for (int i = 0; i < steps; i++)
                {
                    fwd.Forward();
                    bwd.Backprop(fwd, Loss.LogitCrossEntropy);
                    adam.Step(bwd);
                }
            }
            return model;
        }

        static float[] Inference(Model model)
        {
            using (var fwd = model.Preallocate(6))
            {
                fwd.Training = false;
                fwd.SetInputs(Graph.Images(6));
                fwd.Forward();
                return fwd.GetOutputs();
            }
        }

        static void AssertSameModel(Model expected, Model actual)
        {
            Assert.AreEqual(expected.Describe(), actual.Describe());
            Assert.AreEqual(Bits.Of(expected.GetParameters()), Bits.Of(actual.GetParameters()));
            Assert.AreEqual(Bits.Of(expected.GetState()), Bits.Of(actual.GetState()));
            Assert.AreEqual(Bits.Of(Inference(expected)), Bits.Of(Inference(actual)));
        }

        [Test]
        public void ASavedModelLoadsBackIdentical()
        {
            using (var dir = new TempDir())
            using (var model = Trained(3))
            {
                Assert.AreEqual(3f, model.GetState()[8], "three training passes were counted");
                // A UTF-8 path: the binding passes paths as UTF-8 whatever the platform.
                string path = dir.File("modèle ✓.safetensors");
                model.Save(path);
                Assert.IsTrue(File.Exists(path));
                using (var loaded = Model.Load(path))
                    AssertSameModel(model, loaded);
                using (var fromBytes = Model.FromBytes(model.ToBytes()))
                    AssertSameModel(model, fromBytes);
                Assert.AreEqual(File.ReadAllBytes(path), model.ToBytes());
            }
        }

        [Test]
        public void ACorruptFileIsAFileFormatError()
        {
            using (var dir = new TempDir())
            using (var model = new Model("input 3; dense 2"))
            {
                string path = dir.File("model.safetensors");
                model.Save(path);
                var bytes = File.ReadAllBytes(path);
                File.WriteAllBytes(path, bytes.Take(bytes.Length - 4).ToArray());
                var e = Assert.Throws<SnnException>(() => Model.Load(path));
                Assert.AreEqual(Status.FileFormat, e.Status);
                StringAssert.Contains("snn_model_load", e.Message);
            }
        }

        /// <summary>Adam steps on the residual model with fixed data; the dropout
        /// seed of step s is s, so that the masks depend on the step alone.</summary>
        static void Steps(Model model, Optimiser adam, int from, int to)
        {
            using (var fwd = model.Preallocate(6))
            using (var bwd = model.PreallocateGrads(6))
            {
                fwd.SetInputs(Graph.Images(6));
                bwd.SetLabels(Graph.Labels(6));
                for (int s = from; s < to; s++)
                {
                    fwd.SetSeed((ulong)s);
                    fwd.Forward();
                    bwd.Backprop(fwd, Loss.LogitCrossEntropy);
                    adam.Step(bwd);
                }
            }
        }

        [Test]
        public void TrainingResumedFromACheckpointIsBitIdentical()
        {
            const int N = 5, M = 5;
            using (var dir = new TempDir())
            {
                string path = dir.File("run.ckpt");
                float[] parameters, state;
                using (var model = new Model(Graph.Residual))
                using (var adam = model.CreateOptimiser(OptimiserKind.AdamW))
                {
                    model.Init(4);
                    adam.Set(Hyperparameter.LearningRate, 0.003);
                    Steps(model, adam, 0, N);
                    model.SaveCheckpoint(adam, path);
                    Steps(model, adam, N, N + M);
                    Assert.AreEqual(N + M, adam.StepCount);
                    parameters = model.GetParameters();
                    state = model.GetState();
                }

                using (var run = Checkpoint.Load(path))
                {
                    Assert.AreSame(run.Model, run.Optimiser.Model);
                    Assert.AreEqual(N, run.Optimiser.StepCount);
                    Assert.AreEqual(0.003, run.Optimiser.Get(Hyperparameter.LearningRate));
                    Assert.AreNotEqual(Bits.Of(parameters), Bits.Of(run.Model.GetParameters()));
                    Steps(run.Model, run.Optimiser, N, N + M);
                    Assert.AreEqual(N + M, run.Optimiser.StepCount);
                    Assert.AreEqual(Bits.Of(parameters), Bits.Of(run.Model.GetParameters()), "parameters");
                    Assert.AreEqual(Bits.Of(state), Bits.Of(run.Model.GetState()), "state");
                }
            }
        }

        /// <summary>Adam steps on the residual model with one cache seeded once, so
        /// that each step's dropout masks follow from the cache's generator.</summary>
        static void StepsOn(ForwardCache fwd, Optimiser adam, int steps)
        {
            using (var bwd = adam.Model.PreallocateGrads(6))
            {
                bwd.SetLabels(Graph.Labels(6));
                for (int s = 0; s < steps; s++)
                {
                    fwd.Forward();
                    bwd.Backprop(fwd, Loss.LogitCrossEntropy);
                    adam.Step(bwd);
                }
            }
        }

        [Test]
        public void TheRngStateCountsTrainingPassesSinceTheSeed()
        {
            using (var model = new Model(Graph.Residual))
            using (var fwd = model.Preallocate(6))
            {
                fwd.SetInputs(Graph.Images(6));
                Assert.AreEqual(new RngState(0, 0), fwd.RngState, "a new cache has seed 0");
                fwd.SetSeed(42);
                fwd.Forward();
                fwd.Forward();
                Assert.AreEqual(new RngState(42, 2), fwd.RngState);
                fwd.Training = false;
                fwd.Forward();
                Assert.AreEqual(new RngState(42, 2), fwd.RngState, "inference passes do not count");
                fwd.Training = true;
                fwd.RngState = new RngState(42, 1);
                fwd.Forward();
                float[] second = fwd.GetOutputs();
                fwd.SetSeed(42);
                fwd.Forward();
                fwd.Forward();
                Assert.AreEqual(Bits.Of(second), Bits.Of(fwd.GetOutputs()), "state (42, 1) draws the second pass's masks");
            }
        }

        [Test]
        public void ADropoutModelResumedWithItsRngStateMatchesTheUninterruptedRun()
        {
            const int N = 4, M = 4;
            using (var dir = new TempDir())
            {
                string path = dir.File("run.ckpt");
                RngState rng;
                float[] parameters, state;
                using (var model = new Model(Graph.Residual))
                using (var adam = model.CreateOptimiser(OptimiserKind.AdamW))
                using (var fwd = model.Preallocate(6))
                {
                    model.Init(6);
                    adam.Set(Hyperparameter.LearningRate, 0.003);
                    fwd.SetInputs(Graph.Images(6));
                    fwd.SetSeed(1234);
                    StepsOn(fwd, adam, N);
                    model.SaveCheckpoint(adam, path);
                    rng = fwd.RngState;
                    StepsOn(fwd, adam, M);
                    parameters = model.GetParameters();
                    state = model.GetState();
                }
                Assert.AreEqual(new RngState(1234, N), rng);

                using (var run = Checkpoint.Load(path))
                using (var fwd = run.Model.Preallocate(6))
                {
                    fwd.SetInputs(Graph.Images(6));
                    fwd.RngState = rng;
                    StepsOn(fwd, run.Optimiser, M);
                    Assert.AreEqual(Bits.Of(parameters), Bits.Of(run.Model.GetParameters()), "parameters");
                    Assert.AreEqual(Bits.Of(state), Bits.Of(run.Model.GetState()), "state");
                }

                // Without the generator's state, the resumed masks are the seed's first ones.
                using (var run = Checkpoint.Load(path))
                using (var fwd = run.Model.Preallocate(6))
                {
                    fwd.SetInputs(Graph.Images(6));
                    fwd.SetSeed(1234);
                    StepsOn(fwd, run.Optimiser, M);
                    Assert.AreNotEqual(Bits.Of(parameters), Bits.Of(run.Model.GetParameters()));
                }
            }
        }

        [Test]
        public void DisposingACheckpointDisposesItsModelAndOptimiser()
        {
            using (var dir = new TempDir())
            {
                string path = dir.File("run.ckpt");
                using (var model = new Model("input 3; dense 2"))
                using (var adam = model.CreateOptimiser(OptimiserKind.Adam))
                    model.SaveCheckpoint(adam, path);
                var run = Checkpoint.Load(path);
                var model2 = run.Model;
                var adam2 = run.Optimiser;
                run.Dispose();
                Assert.IsTrue(model2.IsDisposed && adam2.IsDisposed);
                Assert.IsTrue(model2.Handle.IsClosed && adam2.Handle.IsClosed, "the native memory was freed");
                run.Dispose();
            }
        }

        [Test]
        public void AFailedCheckpointLoadThrowsAndLeavesNothingOpen()
        {
            using (var dir = new TempDir())
            {
                var missing = Assert.Throws<SnnException>(() => Checkpoint.Load(dir.File("none.ckpt")));
                Assert.AreEqual(Status.Io, missing.Status);
                StringAssert.Contains("snn_checkpoint_load", missing.Message);
                string path = dir.File("cut.ckpt");
                using (var model = new Model("input 3; dense 2"))
                using (var adam = model.CreateOptimiser(OptimiserKind.Adam))
                    model.SaveCheckpoint(adam, path);
                var bytes = File.ReadAllBytes(path);
                File.WriteAllBytes(path, bytes.Take(bytes.Length / 2).ToArray());
                Assert.AreEqual(Status.FileFormat, Assert.Throws<SnnException>(() => Checkpoint.Load(path)).Status);
                Assert.AreEqual("path", Assert.Throws<ArgumentException>(() => Checkpoint.Load(path + "\0")).ParamName);
                Assert.Throws<ArgumentNullException>(() => Checkpoint.Load(null));
            }
        }

#pragma warning disable 618  // the obsolete Model.LoadCheckpoint, which must keep working
        [Test]
        public void TheObsoleteLoadCheckpointStillLoadsBoth()
        {
            using (var dir = new TempDir())
            {
                string path = dir.File("run.ckpt");
                using (var model = new Model("input 3; dense 2"))
                using (var sgd = model.CreateOptimiser(OptimiserKind.Sgd))
                {
                    sgd.Set(Hyperparameter.LearningRate, 0.25);
                    model.SaveCheckpoint(sgd, path);
                }
                Optimiser loaded;
                using (var model = Model.LoadCheckpoint(path, out loaded))
                using (loaded)
                {
                    Assert.AreSame(model, loaded.Model);
                    Assert.AreEqual(0.25, loaded.Get(Hyperparameter.LearningRate));
                }
            }
        }
#pragma warning restore 618
    }

    [TestFixture]
    public class Datasets
    {
        /// <summary>Writes "x,y,label" lines: three clusters of 40 points around
        /// the corners of a triangle, spread deterministically.</summary>
        static void WriteCsv(string path)
        {
            var centres = new[] { new[] { 0.0, 1.0 }, new[] { -0.9, -0.5 }, new[] { 0.9, -0.5 } };
            using (var w = new StreamWriter(path))
            {
                w.WriteLine("x,y,label");
                for (int i = 0; i < 120; i++)
                {
                    int c = i % 3;
                    double angle = i * 2.399963, radius = 0.35 * ((i * 7919) % 100) / 100.0;
                    w.WriteLine(string.Format(CultureInfo.InvariantCulture, "{0:R},{1:R},{2}",
                        centres[c][0] + radius * Math.Cos(angle), centres[c][1] + radius * Math.Sin(angle), c));
                }
            }
        }

        static void ReadCsv(string path, out float[] samples, out int[] labels)
        {
            var rows = File.ReadAllLines(path).Skip(1).Select(line => line.Split(',')).ToArray();
            samples = rows.SelectMany(r => new[] { float.Parse(r[0], CultureInfo.InvariantCulture),
                                                   float.Parse(r[1], CultureInfo.InvariantCulture) }).ToArray();
            labels = rows.Select(r => int.Parse(r[2], CultureInfo.InvariantCulture)).ToArray();
        }

        [Test]
        public void ADataSetReadFromAFileTrainsAClassifier()
        {
            float[] samples;
            int[] labels;
            using (var dir = new TempDir())
            {
                string csv = dir.File("points.csv");
                WriteCsv(csv);
                ReadCsv(csv, out samples, out labels);
            }
            Assert.AreEqual(240, samples.Length);

            const int Batch = 16;
            using (var data = new Dataset(Library.CpuDevice, samples, 2, labels))
            using (var model = new Model("input 2; dense 16 relu; dense 3"))
            using (var fwd = model.Preallocate(Batch))
            using (var bwd = model.PreallocateGrads(Batch))
            using (var sgd = model.CreateOptimiser(OptimiserKind.Sgd))
            {
                Assert.AreEqual(120, data.SampleCount);
                Assert.AreEqual(2, data.Features);
                sgd.Set(Hyperparameter.LearningRate, 0.2);
                sgd.Set(Hyperparameter.Momentum, 0.9);
                var order = Enumerable.Range(0, 120).Select(i => (long)i).ToArray();
                var rng = new Random(1);
                for (int epoch = 0; epoch < 30; epoch++)
                {
                    order = order.OrderBy(_ => rng.Next()).ToArray();
                    for (int start = 0; start + Batch <= order.Length; start += Batch)
                    {
                        var batch = new ReadOnlySpan<long>(order, start, Batch);
                        fwd.SetInputsFromDataset(data, batch);
                        bwd.SetLabelsFromDataset(data, batch);
                        fwd.Forward();
                        bwd.Backprop(fwd, Loss.LogitCrossEntropy);
                        sgd.Step(bwd);
                    }
                }

                // The gather from the data set and the gather from the array agree.
                var some = new long[] { 5, 77, 0, 119 };
                fwd.SetInputsFromDataset(data, some);
                fwd.Forward();
                float[] fromDataset = fwd.GetOutputs();
                fwd.SetInputsGather(samples, some);
                fwd.Forward();
                Assert.AreEqual(fromDataset, fwd.GetOutputs());

                int correct = 0;
                using (var all = model.Preallocate(120))
                {
                    all.SetInputs(samples);
                    all.Forward();
                    var outputs = all.GetOutputs();
                    for (int i = 0; i < 120; i++)
                    {
                        int best = 0;
                        for (int k = 1; k < 3; k++) if (outputs[i * 3 + k] > outputs[i * 3 + best]) best = k;
                        if (best == labels[i]) correct++;
                    }
                }
                Assert.GreaterOrEqual(correct, 114, "accuracy of at least 95% on the 120 points");
            }
        }

        [Test]
        public void DataSetMisuseIsReported()
        {
            using (var model = new Model("input 3; dense 2"))
            using (var fwd = model.Preallocate(4))
            using (var bwd = model.PreallocateGrads(4))
            using (var unlabelled = new Dataset(Library.CpuDevice, new float[12], 3, null))
            using (var wide = new Dataset(Library.CpuDevice, new float[12], 4, new[] { 0, 1, 0 }))
            {
                Assert.AreEqual(Status.State, Assert.Throws<SnnException>(
                    () => bwd.SetLabelsFromDataset(unlabelled, new long[] { 0 })).Status);
                Assert.AreEqual(Status.Count, Assert.Throws<SnnException>(
                    () => fwd.SetInputsFromDataset(wide, new long[] { 0 })).Status);
                Assert.AreEqual(Status.InvalidArgument, Assert.Throws<SnnException>(
                    () => fwd.SetInputsFromDataset(unlabelled, new long[] { 4 })).Status);
                Assert.AreEqual(Status.Count, Assert.Throws<SnnException>(
                    () => new Dataset(Library.CpuDevice, new float[12], 3, new[] { 0, 1 })).Status);
                Assert.AreEqual(Status.Count, Assert.Throws<SnnException>(
                    () => new Dataset(Library.CpuDevice, new float[10], 3, null)).Status);
                unlabelled.Dispose();
                Assert.Throws<ObjectDisposedException>(() => fwd.SetInputsFromDataset(unlabelled, new long[] { 0 }));
            }
        }
    }
}
