// Mixed precision and dynamic loss scaling from C#: bf16 changes nothing on
// a model without matrix products and stays close to float32 on an MLP, the
// CPU refuses fp16 with Status.Unsupported, a forced overflow skips the step
// and lowers the scale, good steps raise it, and checkpoints keep the scaler.
using System;
using System.Linq;
using NUnit.Framework;
using Snn;

namespace Snn.Tests
{
    [TestFixture]
    public class PrecisionTests
    {
        const string Mlp = "input 6; dense 8 tanh; dense 3";
        // No dense, conv, conv1d, attention, lstm nor gru: bf16 has nothing to round.
        const string NoProducts = "input 4x4x2; batchnorm; relu; maxpool 2; flatten; softmax";

        static float[] Inputs(int n)
        {
            return Enumerable.Range(0, n).Select(i => (i * 29 % 97) / 97f * 2f - 1f).ToArray();
        }

        /// <summary>One MSE backprop of the MLP at batch 4 towards `target`.</summary>
        static float MlpBackprop(Model model, BackwardCache bwd, float target)
        {
            using (var fwd = model.Preallocate(4))
            {
                fwd.SetInputs(Inputs(4 * 6));
                fwd.Forward();
                bwd.SetTargets(Enumerable.Repeat(target, 12).ToArray());
                return bwd.Backprop(fwd, Loss.Mse);
            }
        }

        [Test]
        public void ANewCacheComputesInFloat32()
        {
            using (var model = new Model(Mlp))
            using (var fwd = model.Preallocate(2))
                Assert.AreEqual(Precision.Float32, fwd.Precision);
        }

        [Test]
        public void Bf16OnAModelWithoutProductsEqualsFloat32BitForBit()
        {
            using (var model = new Model(NoProducts))
            {
                model.Init(5);
                var outputs = new float[2][];
                var grads = new float[2][];
                var precisions = new[] { Precision.Float32, Precision.Bf16 };
                for (int k = 0; k < 2; k++)
                {
                    using (var fwd = model.Preallocate(3))
                    using (var bwd = model.PreallocateGrads(3))
                    {
                        fwd.Precision = precisions[k];
                        Assert.AreEqual(precisions[k], fwd.Precision);
                        fwd.SetInputs(Inputs(3 * 32));
                        fwd.Forward();
                        outputs[k] = fwd.GetOutputs();
                        bwd.SetTargets(Enumerable.Repeat(0.1f, outputs[k].Length).ToArray());
                        bwd.Backprop(fwd, Loss.Mse);
                        grads[k] = bwd.GetGradients();
                    }
                }
                CollectionAssert.AreEqual(Bits.Of(outputs[0]), Bits.Of(outputs[1]));
                CollectionAssert.AreEqual(Bits.Of(grads[0]), Bits.Of(grads[1]));
                Assert.IsTrue(grads[0].Any(g => g != 0f));
            }
        }

        [Test]
        public void TheCpuRefusesFp16WithUnsupportedAndKeepsThePrecision()
        {
            using (var model = new Model(Mlp))
            using (var fwd = model.Preallocate(2))
            {
                var e = Assert.Throws<SnnException>(() => fwd.Precision = Precision.Fp16);
                Assert.AreEqual(Status.Unsupported, e.Status);
                StringAssert.Contains("fp16", e.Message);
                Assert.AreEqual(Precision.Float32, fwd.Precision);
            }
            bool native;
            Assert.AreEqual(Status.Unsupported, Library.PrecisionSupport(Library.CpuDevice, Precision.Fp16, out native));
            Assert.IsFalse(native);
            Assert.AreEqual(Status.Ok, Library.PrecisionSupport(Library.CpuDevice, Precision.Float32, out native));
            Assert.IsTrue(native);
            Assert.AreEqual(Status.Ok, Library.PrecisionSupport(Library.CpuDevice, Precision.Bf16, out native));
            Assert.AreEqual(native, Library.RequirePrecision(Library.CpuDevice, Precision.Bf16));
            Assert.AreEqual(Status.GpuIndex, Library.PrecisionSupport(-5, Precision.Bf16, out native));
            var u = Assert.Throws<SnnException>(() => Library.RequirePrecision(Library.CpuDevice, Precision.Fp16));
            Assert.AreEqual(Status.Unsupported, u.Status);
            Assert.AreEqual(Status.InvalidArgument, Library.PrecisionSupport(Library.CpuDevice, (Precision)7, out native));
        }

        /// <summary>The outputs and gradient of one MSE pass of `model` at `precision`, batch 8
        /// (at bf16, products of up to 4 rows run as float32's).</summary>
        static float[][] Pass(Model model, Precision precision)
        {
            using (var fwd = model.Preallocate(8))
            using (var bwd = model.PreallocateGrads(8))
            {
                fwd.Precision = precision;
                fwd.SetInputs(Inputs(8 * model.InputSize));
                fwd.Forward();
                var y = fwd.GetOutputs();
                bwd.SetTargets(Enumerable.Repeat(0.1f, y.Length).ToArray());
                bwd.Backprop(fwd, Loss.Mse);
                return new[] { y, bwd.GetGradients() };
            }
        }

        /// <summary>Whether every value of `got` is within `rel` of `want`, relative to the largest `want`.</summary>
        static bool Close(float[] got, float[] want, float rel)
        {
            float scale = want.Max(v => Math.Abs(v));
            return got.Length == want.Length && got.Zip(want, (g, w) => Math.Abs(g - w) <= rel * scale).All(ok => ok);
        }

        // An MLP's outputs and gradients at bf16 lie within 2^-6 of float32's
        // (operands rounded to 8 significant bits, float32 sums), and differ
        // from them: the products were rounded.
        [Test]
        public void Bf16OnAnMlpIsCloseToFloat32()
        {
            using (var model = new Model(Mlp))
            {
                model.Init(2);
                var f32 = Pass(model, Precision.Float32);
                var bf16 = Pass(model, Precision.Bf16);
                Assert.IsTrue(Close(bf16[0], f32[0], 1f / 64), "outputs");
                Assert.IsTrue(Close(bf16[1], f32[1], 1f / 64), "gradients");
                CollectionAssert.AreNotEqual(Bits.Of(f32[0]), Bits.Of(bf16[0]), "bf16 rounded nothing");
            }
        }

        [Test]
        public void LossScalingStartsOffAndTurnsOnWithPyTorchDefaults()
        {
            using (var model = new Model(Mlp))
            using (var plain = model.PreallocateGrads(4))
            using (var scaled = model.PreallocateGrads(4))
            {
                model.Init(1);
                Assert.IsFalse(plain.LossScaling.On);
                Assert.AreEqual(1.0, plain.LossScaling.Scale);
                scaled.SetLossScaling(true);
                Assert.AreEqual(LossScaling.Default, scaled.LossScaling);
                // A power-of-two scale multiplies and divides exactly.
                Assert.AreEqual(MlpBackprop(model, plain, 0.5f), MlpBackprop(model, scaled, 0.5f));
                CollectionAssert.AreEqual(Bits.Of(plain.GetGradients()), Bits.Of(scaled.GetGradients()));
                var state = scaled.LossScaling;
                Assert.AreEqual(1, state.GoodSteps);
                Assert.AreEqual(65536.0, state.Scale);
                Assert.IsFalse(state.Skipped);
                scaled.SetLossScaling(false);
                Assert.IsFalse(scaled.LossScaling.On);
            }
        }

        [Test]
        public void AForcedOverflowSkipsTheStepAndLowersTheScale()
        {
            using (var model = new Model(Mlp))
            using (var bwd = model.PreallocateGrads(4))
            using (var adam = model.CreateOptimiser(OptimiserKind.Adam))
            {
                model.Init(2);
                var settings = new LossScaling { On = true, Scale = 1e38, GrowthFactor = 2.0, BackoffFactor = 0.25,
                                                 GrowthInterval = 3, GoodSteps = 2 };
                bwd.LossScaling = settings;
                var before = model.GetParameters();
                MlpBackprop(model, bwd, 1e3f);
                var state = bwd.LossScaling;
                Assert.IsTrue(state.Skipped);
                Assert.AreEqual(0.25e38, state.Scale);
                Assert.AreEqual(0, state.GoodSteps);
                adam.Step(bwd);
                CollectionAssert.AreEqual(Bits.Of(before), Bits.Of(model.GetParameters()));
                Assert.AreEqual(0, adam.StepCount);

                // The third good step in a row grows the scale, and the step runs.
                settings.Scale = 1024.0;
                bwd.LossScaling = settings;
                MlpBackprop(model, bwd, 0.5f);
                state = bwd.LossScaling;
                Assert.IsFalse(state.Skipped);
                Assert.AreEqual(2048.0, state.Scale);
                Assert.AreEqual(0, state.GoodSteps);
                adam.Step(bwd);
                CollectionAssert.AreNotEqual(Bits.Of(before), Bits.Of(model.GetParameters()));
                Assert.AreEqual(1, adam.StepCount);
            }
        }

        [Test]
        public void SettingsOutOfRangeAreRefusedAndChangeNothing()
        {
            using (var model = new Model(Mlp))
            using (var bwd = model.PreallocateGrads(2))
            {
                var good = LossScaling.Default;
                good.Scale = 8.0;
                good.GrowthInterval = 10;
                var bad = new[] { good, good, good, good, good, good, good };
                bad[0].Scale = 0.0;
                bad[1].Scale = 1e39;
                bad[2].GrowthFactor = 1.0;
                bad[3].BackoffFactor = 1.0;
                bad[4].GrowthInterval = 0;
                bad[5].GoodSteps = 10;
                bad[6].GoodSteps = -1;
                foreach (var b in bad)
                {
                    var e = Assert.Throws<SnnException>(() => bwd.LossScaling = b, b.ToString());
                    Assert.AreEqual(Status.InvalidArgument, e.Status, b.ToString());
                    Assert.IsFalse(bwd.LossScaling.On, b.ToString());
                }
                bwd.LossScaling = good;
                Assert.AreEqual(good, bwd.LossScaling);
                good.On = false;
                bwd.LossScaling = good;
                Assert.IsFalse(bwd.LossScaling.On);
            }
        }

        [Test]
        public void CheckpointsKeepTheScalerAndTrainingResumesWithIt()
        {
            using (var dir = new TempDir())
            using (var model = new Model(Mlp))
            using (var sgd = model.CreateOptimiser(OptimiserKind.Sgd))
            using (var bwd = model.PreallocateGrads(4))
            using (var off = model.PreallocateGrads(4))
            {
                model.Init(3);
                var saved = new LossScaling { On = true, Scale = 0.5, GrowthFactor = 3.0, BackoffFactor = 0.375,
                                              GrowthInterval = 7, GoodSteps = 6 };
                bwd.LossScaling = saved;
                model.SaveCheckpoint(sgd, bwd, dir.File("with.snn"));
                model.SaveCheckpoint(sgd, off, dir.File("without.snn"));
                using (var run = Checkpoint.Load(dir.File("with.snn")))
                using (var restored = run.Model.PreallocateGrads(4))
                {
                    CollectionAssert.AreEqual(Bits.Of(model.GetParameters()), Bits.Of(run.Model.GetParameters()));
                    restored.LoadLossScaling(dir.File("with.snn"));
                    Assert.AreEqual(saved, restored.LossScaling);
                    // The seventh good step in a row grows the restored scale by 3.
                    MlpBackprop(run.Model, restored, 0.5f);
                    var state = restored.LossScaling;
                    Assert.AreEqual(1.5, state.Scale);
                    Assert.AreEqual(0, state.GoodSteps);
                    Assert.IsFalse(state.Skipped);

                    restored.LoadLossScaling(dir.File("without.snn"));
                    Assert.IsFalse(restored.LossScaling.On);
                    model.Save(dir.File("model.snn"));
                    restored.SetLossScaling(true);
                    var e = Assert.Throws<SnnException>(() => restored.LoadLossScaling(dir.File("model.snn")));
                    Assert.AreEqual(Status.FileFormat, e.Status);
                    Assert.AreEqual(LossScaling.Default, restored.LossScaling);
                }
            }
        }
    }
}
