// Checked views (a read after the owner's disposal or a later Forward throws
// instead of returning freed or rewritten memory), inference caches and
// Predict, the callbacks marked for IL2CPP, and where a package puts the
// native library.
using System;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.InteropServices;
using NUnit.Framework;
using Snn;

namespace Snn.Tests
{
    [TestFixture]
    public class Views
    {
        [Test]
        public void AnOutputsViewReadAfterItsCacheIsDisposedThrows()
        {
            using (var model = new Model("input 2; dense 3"))
            {
                model.Init(1);
                var fwd = model.PreallocateInference(1);
                var view = fwd.Predict(new float[] { 1, 2 });
                float expected = fwd.GetOutputs()[2];
                Assert.AreEqual(expected, view[2]);
                Assert.IsTrue(view.IsValid);
                fwd.Dispose();
                Assert.IsFalse(view.IsValid);
                Assert.Throws<ObjectDisposedException>(() => { float x = view[2]; });
                Assert.Throws<ObjectDisposedException>(() => view.ToArray());
                Assert.Throws<ObjectDisposedException>(() => { var s = view.Span; });
            }
        }

        [Test]
        public void AnOutputsViewIsStaleAfterTheNextForward()
        {
            using (var model = new Model("input 2; dense 3"))
            using (var fwd = model.PreallocateInference(2))
            {
                model.Init(1);
                var first = fwd.Predict(new float[] { 1, 2, 3, 4 });
                Assert.AreEqual(2, first.Batch);
                Assert.AreEqual(3, first.SampleSize);
                Assert.AreEqual(fwd.GetOutputs()[5], first[1, 2]);
                var second = fwd.Predict(new float[] { 5, 6 });
                Assert.AreEqual(1, second.Batch);
                Assert.IsFalse(first.IsValid);
                var e = Assert.Throws<InvalidOperationException>(() => { float x = first[0]; });
                StringAssert.Contains("stale", e.Message);
                Assert.AreEqual(fwd.GetOutputs(), second.ToArray());
                Assert.Throws<IndexOutOfRangeException>(() => { float x = second[3]; });
            }
        }

        [Test]
        public void AParametersViewChecksItsModel()
        {
            var model = new Model("input 2; dense 1");
            model.Init(3);
            var view = model.ParametersView();
            view[0] = 0.5f;
            Assert.AreEqual(0.5f, model.GetParameters()[0]);
            Assert.AreEqual(0.5f, view.Span[0]);
            model.Dispose();
            Assert.Throws<ObjectDisposedException>(() => { float x = view[0]; });
            Assert.Throws<ObjectDisposedException>(() => { view[0] = 1; });
        }

        [Test]
        public void AGradientsViewChecksItsCache()
        {
            using (var model = new Model("input 2; dense 1"))
            using (var fwd = model.Preallocate(1))
            {
                model.Init(3);
                var bwd = model.PreallocateGrads(1);
                fwd.SetInputs(new float[] { 1, 2 });
                fwd.Forward();
                bwd.SetTargets(new float[] { 1 });
                bwd.Backprop(fwd, Loss.Mse);
                var view = bwd.GradientsView();
                Assert.AreEqual(bwd.GetGradients(), view.ToArray());
                bwd.Dispose();
                Assert.Throws<ObjectDisposedException>(() => view.ToArray());
            }
        }

        [Test]
        public void ADefaultViewThrows()
        {
            var view = default(ReadOnlyFloatView);
            Assert.IsFalse(view.IsValid);
            Assert.Throws<InvalidOperationException>(() => { float x = view[0]; });
        }
    }

    [TestFixture]
    public class InferenceCaches
    {
        const string Spec = "input 4; dense 8; batchnorm; relu; dropout 0.5; dense 3";

        [Test]
        public void PreallocateStartsInTrainingPreallocateInferenceInInference()
        {
            using (var model = new Model(Spec))
            using (var train = model.Preallocate(2))
            using (var infer = model.PreallocateInference(2))
            using (var infer2 = model.Preallocate(2, CacheMode.Inference))
            {
                Assert.IsTrue(train.Training);
                Assert.IsFalse(infer.Training);
                Assert.IsFalse(infer2.Training);
            }
        }

        [Test]
        public void AnInferenceCacheLeavesTheRunningStatisticsAndDropsNothing()
        {
            using (var model = new Model(Spec))
            using (var infer = model.PreallocateInference(2))
            using (var train = model.Preallocate(2))
            {
                model.Init(7);
                var x = new float[] { 1, -2, 3, 0.5f, 0.25f, 2, -1, 4 };
                float[] state = model.GetState();
                float[] a = infer.Predict(x).ToArray();
                float[] b = infer.Predict(x).ToArray();
                Assert.AreEqual(a, b);                    // no dropout
                Assert.AreEqual(state, model.GetState()); // running statistics untouched
                train.SetInputs(x);
                train.Forward();
                Assert.AreNotEqual(state, model.GetState());  // a training cache moves them
            }
        }

        [Test]
        public void ModelPredictReturnsTheOutputsWithTheirShape()
        {
            using (var model = new Model("input 3; dense 4 relu; dense 2"))
            using (var infer = model.PreallocateInference(2))
            {
                model.Init(5);
                var x = new float[] { 1, 2, 3, -1, 0, 1 };
                Prediction p = model.Predict(x);
                Assert.AreEqual(2, p.Batch);
                Assert.AreEqual(new[] { 2, 1, 1 }, p.SampleShape);
                Assert.AreEqual(2, p.SampleSize);
                var expected = infer.Predict(x);
                Assert.AreEqual(expected.ToArray(), p.Values);
                Assert.AreEqual(expected.ArgMax(1), p.ArgMax(1));
                Assert.AreEqual(expected[1, 1], p[1, 1]);
                var e = Assert.Throws<SnnException>(() => model.Predict(new float[4]));
                Assert.AreEqual(Status.Count, e.Status);
            }
        }
    }

    [TestFixture]
    public class NativeInterop
    {
        [Test]
        public void EveryMethodNativeCodeCallsIsMarkedMonoPInvokeCallback()
        {
            var assembly = typeof(Model).Assembly;
            const BindingFlags all = BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Static |
                                     BindingFlags.Instance | BindingFlags.DeclaredOnly;
            // The delegate types handed to native code: parameters of [DllImport]s.
            var callbackTypes = assembly.GetTypes().SelectMany(t => t.GetMethods(all))
                .Where(m => (m.Attributes & MethodAttributes.PinvokeImpl) != 0)
                .SelectMany(m => m.GetParameters()).Select(p => p.ParameterType)
                .Where(t => typeof(Delegate).IsAssignableFrom(t)).Distinct().ToList();
            Assert.IsNotEmpty(callbackTypes);
            foreach (var type in callbackTypes)
            {
                var invoke = type.GetMethod("Invoke");
                var signature = invoke.GetParameters().Select(p => p.ParameterType).ToArray();
                var targets = assembly.GetTypes().SelectMany(t => t.GetMethods(all))
                    .Where(m => m.ReturnType == invoke.ReturnType &&
                                m.GetParameters().Select(p => p.ParameterType).SequenceEqual(signature) &&
                                (m.Attributes & MethodAttributes.PinvokeImpl) == 0 && m.DeclaringType != type)
                    .ToList();
                Assert.IsNotEmpty(targets, type.Name + ": no method of the binding implements it");
                foreach (var m in targets)
                {
                    Assert.IsTrue(m.IsStatic, m.Name + " must be static for IL2CPP");
                    var mark = m.GetCustomAttributes(typeof(MonoPInvokeCallbackAttribute), false)
                        .Cast<MonoPInvokeCallbackAttribute>().SingleOrDefault();
                    Assert.IsNotNull(mark, m.DeclaringType.Name + "." + m.Name + " lacks [MonoPInvokeCallback]");
                    Assert.AreEqual(type, mark.DelegateType);
                }
            }
        }

        [Test]
        public void APackagePutsTheLibraryUnderRuntimesRidNative()
        {
            string rid = NativeLibraryName.RuntimeIdentifier;
            if (RuntimeInformation.IsOSPlatform(OSPlatform.Linux) &&
                RuntimeInformation.ProcessArchitecture == Architecture.X64)
                Assert.AreEqual("linux-x64", rid);
            string dir = Path.Combine(Path.GetTempPath(), "pkg", "lib", "netstandard2.1");
            var candidates = NativeLibraryName.PackageCandidates(dir);
            string platformFile = NativeLibraryName.For(NativeLibraryName.CurrentPlatform);
            Assert.AreEqual(Path.GetFullPath(Path.Combine(dir, "runtimes", rid, "native", platformFile)), candidates[0]);
            Assert.AreEqual(Path.GetFullPath(Path.Combine(Path.GetTempPath(), "pkg", "runtimes", rid, "native",
                                                          NativeLibraryName.Unversioned(NativeLibraryName.CurrentPlatform))),
                            candidates[3]);
            Assert.IsEmpty(NativeLibraryName.PackageCandidates(null));
            // The tests load the library from the loader's path, not from a package.
            Assert.IsNull(NativeLibraryName.LoadedFromPackage);
        }
    }
}
