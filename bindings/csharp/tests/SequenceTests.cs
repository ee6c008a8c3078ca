// NUnit tests of sequence models: lengths, one label per step, token ids and
// token data sets.
using System;
using System.Linq;
using NUnit.Framework;
using Snn;

namespace Snn.Tests
{
    [TestFixture]
    public class SequenceTests
    {
        const string Spec = "input seq 5x3; dense 4 tanh; layernorm; dense 6";
        const int T = 5, F = 3, K = 6;
        static readonly int[] Lengths = { 5, 2, 4 };

        // Three samples of 5 steps of 3 features, [batch][T][F].
        static float[] Inputs()
        {
            return Enumerable.Range(0, 3 * T * F).Select(i => (i * 7 % 11) / 11f - 0.5f).ToArray();
        }

        // One label per step, [batch][T]: -1 ignores step 1 of sample 0, and
        // the padded steps (at and after each sample's length) hold class 3.
        static int[] Labels()
        {
            var labels = new int[3 * T];
            for (int s = 0; s < 3; s++)
                for (int t = 0; t < T; t++)
                    labels[s * T + t] = t >= Lengths[s] ? 3 : (s + 2 * t) % K;
            labels[1] = -1;
            return labels;
        }

        // Cross-entropy of [batch][T][K] logits, the mean over the steps
        // counted: those before each sample's length whose label is not -1.
        static double ExpectedLoss(float[] outputs, int[] labels, int[] lengths, int steps, int classes)
        {
            double sum = 0;
            int counted = 0;
            for (int s = 0; s < lengths.Length; s++)
                for (int t = 0; t < lengths[s]; t++)
                {
                    int label = labels[s * steps + t];
                    if (label < 0) continue;
                    var row = outputs.Skip((s * steps + t) * classes).Take(classes).Select(y => (double)y).ToArray();
                    double top = row.Max();
                    sum += Math.Log(row.Sum(y => Math.Exp(y - top))) + top - row[label];
                    counted++;
                }
            return sum / counted;
        }

        static Model NewModel()
        {
            var model = new Model(Spec);
            model.Init(11);
            return model;
        }

        // One pass: inputs, optional lengths, per-step labels; the loss and the gradient.
        static float Run(Model model, ForwardCache fwd, BackwardCache bwd, float[] x, int[] lengths, int[] labels,
                         out float[] gradient)
        {
            fwd.Batch = x.Length / (T * F);
            fwd.SetInputs(x);
            if (lengths != null) fwd.SetLengths(lengths);
            fwd.Forward();
            bwd.SetLabels(labels);
            float loss = bwd.Backprop(fwd, Loss.LogitCrossEntropy);
            gradient = bwd.GetGradients();
            return loss;
        }

        [Test]
        public void TheInputOfASequenceModelReportsItsSteps()
        {
            using (var model = NewModel())
            using (var vector = new Model("input 3; dense 2"))
            {
                Assert.AreEqual(T, model.InputSequence.Steps);
                Assert.AreEqual(0, model.InputSequence.Vocab);
                Assert.AreEqual(T * F, model.InputSize);
                Assert.AreEqual(T * K, model.OutputSize);
                Assert.AreEqual(new[] { K, T, 1 }, model.LayerShape(3));
                Assert.AreEqual(0, vector.InputSequence.Steps);
                Assert.AreEqual(0, vector.InputSequence.Vocab);
            }
        }

        [Test]
        public void TheLossOverStepsIsTheMeanOverTheStepsCounted()
        {
            using (var model = NewModel())
            using (var fwd = model.Preallocate(3))
            using (var bwd = model.PreallocateGrads(3))
            {
                float[] x = Inputs(), gradient, same, ignored;
                int[] labels = Labels();
                float loss = Run(model, fwd, bwd, x, Lengths, labels, out gradient);
                float[] outputs = fwd.GetOutputs();
                Assert.AreEqual(3 * T * K, outputs.Length);
                double expected = ExpectedLoss(outputs, labels, Lengths, T, K);
                Assert.AreEqual(expected, loss, 1e-5 * Math.Abs(expected));

                // a padded step's label changes nothing, bit for bit
                var padded = (int[])labels.Clone();
                padded[T + 3] = 0;
                Assert.AreEqual(loss, Run(model, fwd, bwd, x, Lengths, padded, out same));
                Assert.AreEqual(gradient, same);

                // a valid step's label does
                var valid = (int[])labels.Clone();
                valid[T + 1] = (valid[T + 1] + 1) % K;
                Assert.AreNotEqual(loss, Run(model, fwd, bwd, x, Lengths, valid, out ignored));

                // without lengths every step counts, the padded ones too
                float full = Run(model, fwd, bwd, x, null, labels, out ignored);
                expected = ExpectedLoss(fwd.GetOutputs(), labels, new[] { T, T, T }, T, K);
                Assert.AreEqual(expected, full, 1e-5 * Math.Abs(expected));
                Assert.AreNotEqual(loss, full);
            }
        }

        [Test]
        public void GatheredSamplesLengthsAndLabelsEqualTheDirectOnes()
        {
            using (var model = NewModel())
            using (var fwd = model.Preallocate(3))
            using (var bwd = model.PreallocateGrads(3))
            {
                float[] x = Inputs(), gradient;
                int[] labels = Labels();
                var order = new[] { 2, 0 };
                var directX = order.SelectMany(s => x.Skip(s * T * F).Take(T * F)).ToArray();
                var directLabels = order.SelectMany(s => labels.Skip(s * T).Take(T)).ToArray();
                var directLengths = order.Select(s => Lengths[s]).ToArray();
                float direct = Run(model, fwd, bwd, directX, directLengths, directLabels, out gradient);
                float[] outputs = fwd.GetOutputs();

                var indices = order.Select(s => (long)s).ToArray();
                fwd.SetInputsGather(x, indices);
                fwd.SetLengthsGather(Lengths, indices);
                fwd.Forward();
                bwd.SetLabelsGather(labels, indices);
                Assert.AreEqual(direct, bwd.Backprop(fwd, Loss.LogitCrossEntropy));
                Assert.AreEqual(gradient, bwd.GetGradients());
                Assert.AreEqual(outputs, fwd.GetOutputs());

                var e = Assert.Throws<SnnException>(() => bwd.SetLabelsGather(labels.Take(T + 1).ToArray(), indices));
                Assert.AreEqual(Status.Count, e.Status);
                e = Assert.Throws<SnnException>(() => fwd.SetLengthsGather(Lengths, new long[] { 0, 3 }));
                Assert.AreEqual(Status.InvalidArgument, e.Status);
            }
        }

        [Test]
        public void LengthsOutOfRangeAndMisplacedAreRefused()
        {
            using (var model = NewModel())
            using (var fwd = model.Preallocate(3))
            using (var vector = new Model("input 3; dense 2"))
            using (var vectorFwd = vector.Preallocate(1))
            {
                Assert.AreEqual(Status.State, Assert.Throws<SnnException>(() => fwd.SetLengths(Lengths)).Status);
                fwd.SetInputs(Inputs());
                foreach (var bad in new[] { new[] { 0, 2, 4 }, new[] { 5, 6, 4 }, new[] { 5, -1, 4 } })
                {
                    var e = Assert.Throws<SnnException>(() => fwd.SetLengths(bad));
                    Assert.AreEqual(Status.InvalidArgument, e.Status);
                    StringAssert.Contains("[1, 5]", e.Message);
                }
                Assert.AreEqual(Status.Count, Assert.Throws<SnnException>(() => fwd.SetLengths(new[] { 5, 2 })).Status);
                fwd.SetLengths(Lengths);
                vectorFwd.SetInputs(new float[] { 1, 2, 3 });
                Assert.AreEqual(Status.Unsupported,
                                Assert.Throws<SnnException>(() => vectorFwd.SetLengths(new[] { 1 })).Status);
            }
            // a strided convolution changes the number of steps: no lengths
            using (var strided = new Model("input seq 6x2; conv1d 3 4 stride=2"))
            using (var fwd = strided.Preallocate(1))
            {
                Assert.AreEqual(new[] { 4, 2, 1 }, strided.LayerShape(1));
                fwd.SetInputs(new float[12]);
                Assert.AreEqual(Status.Unsupported, Assert.Throws<SnnException>(() => fwd.SetLengths(new[] { 3 })).Status);
            }
        }

        [Test]
        public void StepLabelsAreChecked()
        {
            using (var model = NewModel())
            using (var bwd = model.PreallocateGrads(3))
            {
                int[] labels = Labels();
                Assert.AreEqual(Status.Count,
                                Assert.Throws<SnnException>(() => bwd.SetLabels(labels.Take(14).ToArray())).Status);
                foreach (int bad in new[] { K, -2 })
                {
                    var wrong = (int[])labels.Clone();
                    wrong[7] = bad;
                    var e = Assert.Throws<SnnException>(() => bwd.SetLabels(wrong));
                    Assert.AreEqual(Status.Label, e.Status);
                    StringAssert.Contains("sample 1, step 2", e.Message);
                }
                bwd.SetLabels(labels);
            }
        }

        [Test]
        public void TokenIdsAreRefusedByAModelOfFloatsAndCheckedInDataSets()
        {
            using (var model = NewModel())
            using (var fwd = model.Preallocate(2))
            {
                fwd.Batch = 2;
                var e = Assert.Throws<SnnException>(() => fwd.SetTokens(new[] { 1, 2, 3, 4, 0, 1, 2, 3, 4, 0 }));
                Assert.AreEqual(Status.Unsupported, e.Status);
                e = Assert.Throws<SnnException>(() => fwd.SetTokensGather(new[] { 1, 2, 3, 4, 0 }, new long[] { 0 }));
                Assert.AreEqual(Status.Unsupported, e.Status);

                var ids = new[] { 1, 2, 3, 4, 0 };
                e = Assert.Throws<SnnException>(() => Dataset.Tokens(Library.CpuDevice, new[] { 1, 2, -3, 4, 0 }, T,
                                                                     null, null));
                Assert.AreEqual(Status.Token, e.Status);
                e = Assert.Throws<SnnException>(() => Dataset.Tokens(Library.CpuDevice, ids, T, new[] { 6 }, null));
                Assert.AreEqual(Status.InvalidArgument, e.Status);
                e = Assert.Throws<SnnException>(() => Dataset.Tokens(Library.CpuDevice, ids, T, null, new[] { 0, 1 }));
                Assert.AreEqual(Status.Count, e.Status);
                e = Assert.Throws<SnnException>(() => Dataset.Tokens(Library.CpuDevice, ids, T, null,
                                                                     new[] { 0, -2, 1, 1, 1 }));
                Assert.AreEqual(Status.InvalidArgument, e.Status);
                using (var data = Dataset.Tokens(Library.CpuDevice, ids, T, new[] { 3 }, new[] { 0, -1, 1, 1, 1 }))
                {
                    Assert.AreEqual(1, data.SampleCount);
                    Assert.AreEqual(T, data.Features);
                    e = Assert.Throws<SnnException>(() => fwd.SetInputsFromDataset(data, new long[] { 0 }));
                    Assert.AreEqual(Status.Unsupported, e.Status);
                }
            }
        }

        const string TokenSpec = "input tokens 4 vocab=10; embedding 8; dense 3";

        [Test]
        public void TokenIdsOutsideTheVocabularyAreRefused()
        {
            using (var model = new Model(TokenSpec))
            using (var fwd = model.Preallocate(2))
            using (var wide = Dataset.Tokens(Library.CpuDevice, new[] { 0, 1, 2, 10 }, 4, null, null))
            {
                Assert.AreEqual(4, model.InputSequence.Steps);
                Assert.AreEqual(10, model.InputSequence.Vocab);
                fwd.Batch = 2;
                foreach (int bad in new[] { 10, -1 })
                {
                    var e = Assert.Throws<SnnException>(() => fwd.SetTokens(new[] { 0, 1, 2, 3, 4, 5, 6, bad }));
                    Assert.AreEqual(Status.Token, e.Status);
                    StringAssert.Contains("sample 1, step 3", e.Message);
                    StringAssert.Contains(bad.ToString(), e.Message);
                }
                var g = Assert.Throws<SnnException>(() => fwd.SetTokensGather(new[] { 0, 1, 2, 3, 9, 9, 12, 9 },
                                                                               new long[] { 0, 1 }));
                Assert.AreEqual(Status.Token, g.Status);
                Assert.AreEqual(Status.Count, Assert.Throws<SnnException>(() => fwd.SetTokens(new[] { 0, 1, 2 })).Status);
                Assert.AreEqual(Status.Unsupported, Assert.Throws<SnnException>(() => fwd.SetInputs(new float[8])).Status);
                var d = Assert.Throws<SnnException>(() => fwd.SetInputsFromDataset(wide, new long[] { 0 }));
                Assert.AreEqual(Status.Token, d.Status);
            }
        }

        [Test]
        public void ATokenDataSetGathersIdsLengthsAndStepLabels()
        {
            var tokens = new[] { 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 9, 0 };
            var lengths = new[] { 4, 2, 3 };
            var labels = new[] { 0, 1, 2, 0, 2, -1, 1, 1, 1, 0, 2, 2 };
            var indices = new long[] { 2, 1 };
            using (var model = new Model(TokenSpec))
            using (var data = Dataset.Tokens(Library.CpuDevice, tokens, 4, lengths, labels))
            using (var fwd = model.Preallocate(3))
            using (var bwd = model.PreallocateGrads(3))
            {
                model.Init(3);
                fwd.SetInputsFromDataset(data, indices);
                fwd.Forward();
                bwd.SetLabelsFromDataset(data, indices);
                float fromData = bwd.Backprop(fwd, Loss.LogitCrossEntropy);
                float[] gradient = bwd.GetGradients();

                fwd.SetTokensGather(tokens, indices);
                fwd.SetLengthsGather(lengths, indices);
                fwd.Forward();
                bwd.SetLabelsGather(labels, indices);
                Assert.AreEqual(fromData, bwd.Backprop(fwd, Loss.LogitCrossEntropy));
                Assert.AreEqual(gradient, bwd.GetGradients());

                // samples 2 then 1 directly: 3 + 1 steps counted (sample 1's step 1 is -1)
                fwd.Batch = 2;
                fwd.SetTokens(new[] { 9, 0, 9, 0, 5, 6, 7, 8 });
                fwd.SetLengths(new[] { 3, 2 });
                fwd.Forward();
                var direct = new[] { 1, 0, 2, 2, 2, -1, 1, 1 };
                bwd.SetLabels(direct);
                float loss = bwd.Backprop(fwd, Loss.LogitCrossEntropy);
                Assert.AreEqual(fromData, loss);
                double expected = ExpectedLoss(fwd.GetOutputs(), direct, new[] { 3, 2 }, 4, 3);
                Assert.AreEqual(expected, loss, 1e-5 * Math.Abs(expected));
            }
        }
    }
}
