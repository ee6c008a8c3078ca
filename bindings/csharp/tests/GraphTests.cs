// The graph engine from C#: a residual block with batchnorm, a concat,
// layernorm and dropout; training and inference modes per cache; the dropout
// seed; the state vector (batchnorm's running statistics).
using System;
using System.Linq;
using NUnit.Framework;
using Snn;

namespace Snn.Tests
{
    [TestFixture]
    public class Graph
    {
        // Layers: 0 input, 1 conv (a), 2 conv, 3 batchnorm, 4 relu, 5 conv,
        // 6 batchnorm, 7 add a, 8 relu, 9 concat a, 10 globalavgpool,
        // 11 flatten, 12 layernorm, 13 dropout, 14 dense.
        internal const string Residual =
            "input 8x8x2; conv 3 4 pad=1 relu name=a; conv 3 4 pad=1 nobias; batchnorm; relu; " +
            "conv 3 4 pad=1 nobias; batchnorm; add a; relu; concat a; globalavgpool; flatten; " +
            "layernorm; dropout 0.5; dense 3";

        internal static float[] Images(int batch)
        {
            var x = new float[batch * 128];
            for (int i = 0; i < x.Length; i++) x[i] = (i * 53 % 97) / 97f - 0.5f + (i / 128 % 3) * 0.3f;
            return x;
        }

        internal static int[] Labels(int batch)
        {
            return Enumerable.Range(0, batch).Select(i => i % 3).ToArray();
        }

        [Test]
        public void LayersShapesAndStateFollowTheSpec()
        {
            using (var model = new Model(Residual))
            {
                Assert.AreEqual(15, model.LayerCount);
                Assert.AreEqual(new[] { 8, 8, 8 }, model.LayerShape(9));
                Assert.AreEqual(new[] { 8, 1, 1 }, model.LayerShape(11));
                Assert.AreEqual(3, model.OutputSize);
                var bn = model.LayerParams(3);
                Assert.AreEqual(4, bn.WeightCount);
                Assert.AreEqual(4, bn.BiasCount);
                // running_mean [4], running_var [4], num_batches_tracked [1] per batchnorm
                Assert.AreEqual(18, model.StateCount);
                Assert.AreEqual(0, model.LayerState(3).Offset);
                Assert.AreEqual(9, model.LayerState(3).Count);
                Assert.AreEqual(9, model.LayerState(6).Offset);
                Assert.AreEqual(0, model.LayerState(1).Count);
                var state = model.GetState();
                Assert.AreEqual(new float[] { 0, 0, 0, 0, 1, 1, 1, 1, 0 }, state.Take(9).ToArray());
                var e = Assert.Throws<SnnException>(() => model.LayerState(15));
                Assert.AreEqual(Status.InvalidArgument, e.Status);
            }
        }

        [Test]
        public void TrainingAndInferenceModesGiveDifferentOutputsAndOnlyTrainingWritesTheState()
        {
            using (var model = new Model(Residual))
            using (var fwd = model.Preallocate(6))
            {
                model.Init(11);
                fwd.SetInputs(Images(6));
                Assert.IsTrue(fwd.Training, "a cache starts in training mode");

                fwd.Training = false;
                Assert.IsFalse(fwd.Training);
                var initialState = model.GetState();
                fwd.Forward();
                float[] inference = fwd.GetOutputs();
                fwd.Forward();
                Assert.AreEqual(inference, fwd.GetOutputs(), "inference is deterministic");
                Assert.AreEqual(initialState, model.GetState(), "inference only reads the model");

                fwd.Training = true;
                fwd.Forward();
                float[] training = fwd.GetOutputs();
                Assert.AreNotEqual(inference, training);
                var state = model.GetState();
                Assert.AreEqual(1f, state[8], "num_batches_tracked of the first batchnorm");
                Assert.AreEqual(1f, state[17], "num_batches_tracked of the second batchnorm");
                Assert.IsTrue(state.Take(4).Any(m => m != 0f), "running means moved");
            }
        }

        [Test]
        public void DropoutMasksFollowTheSeed()
        {
            using (var model = new Model(Residual))
            using (var fwd = model.Preallocate(6))
            {
                fwd.SetInputs(Images(6));
                fwd.SetSeed(7);
                fwd.Forward();
                float[] first = fwd.GetOutputs();
                fwd.Forward();
                Assert.AreNotEqual(first, fwd.GetOutputs(), "the next pass draws new masks");
                fwd.SetSeed(7);
                fwd.Forward();
                Assert.AreEqual(first, fwd.GetOutputs(), "the same seed gives the same masks");
                fwd.SetSeed(8);
                fwd.Forward();
                Assert.AreNotEqual(first, fwd.GetOutputs());
            }
        }

        [Test]
        public void StateRoundTripsAndDrivesInference()
        {
            using (var model = new Model(Residual))
            using (var fwd = model.Preallocate(6))
            {
                fwd.Training = false;
                fwd.SetInputs(Images(6));
                fwd.Forward();
                float[] before = fwd.GetOutputs();
                float[] original = model.GetState();

                var state = new float[model.StateCount];
                for (int i = 0; i < state.Length; i++) state[i] = 0.5f + 0.25f * (i % 5);
                state[8] = state[17] = 3f;  // num_batches_tracked counts whole batches
                model.SetState(state);
                Assert.AreEqual(state, model.GetState());
                fwd.Forward();
                Assert.AreNotEqual(before, fwd.GetOutputs(), "inference uses the running statistics");

                model.SetState(original);
                fwd.Forward();
                Assert.AreEqual(before, fwd.GetOutputs());
            }
        }

        [Test]
        public void AResidualNetworkTrainsWithAdam()
        {
            using (var model = new Model(Residual))
            using (var train = model.Preallocate(12))
            using (var eval = model.Preallocate(12))
            using (var bwd = model.PreallocateGrads(12))
            using (var adam = model.CreateOptimiser(OptimiserKind.Adam))
            {
                model.Init(2);
                adam.Set(Hyperparameter.LearningRate, 0.01);
                train.SetInputs(Images(12));
                eval.SetInputs(Images(12));
                eval.Training = false;
                bwd.SetLabels(Labels(12));
                Func<float> evalLoss = () =>
                {
                    eval.Forward();
                    return bwd.Backprop(eval, Loss.LogitCrossEntropy);
                };
                float initial = evalLoss();
                for (int step = 0; step < 100; step++)
                {
                    train.Forward();
                    bwd.Backprop(train, Loss.LogitCrossEntropy);
                    adam.Step(bwd);
                }
                float final = evalLoss();
                Assert.Less(final, 0.05f, "inference-mode cross-entropy after 100 steps (from " + initial + ")");
            }
        }
    }
}
