// ONNX from C#: a model exported and imported again has the same spec,
// bit-identical parameters and the same outputs; broken bytes and missing
// files give their status.
using System;
using System.IO;
using NUnit.Framework;
using Snn;

namespace Snn.Tests
{
    [TestFixture]
    public class Onnx
    {
        const string Spec = "input 6; dense 8 relu; dense 5 tanh; dense 3";

        static float[] Inputs()
        {
            var x = new float[4 * 6];
            for (int i = 0; i < x.Length; i++) x[i] = (i * 17 % 23) / 23f - 0.5f;
            return x;
        }

        static float[] Outputs(Model model)
        {
            using (var fwd = model.Preallocate(4))
            {
                fwd.Training = false;
                fwd.SetInputs(Inputs());
                fwd.Forward();
                return fwd.GetOutputs();
            }
        }

        [Test]
        public void AnExportedModelImportsWithTheSameSpecParametersAndOutputs()
        {
            using (var dir = new TempDir())
            using (var model = new Model(Spec))
            {
                model.Init(5);
                byte[] bytes = model.ExportOnnx();
                string path = dir.File("modèle.onnx");
                model.ExportOnnx(path);
                Assert.AreEqual(bytes, File.ReadAllBytes(path));
                using (var fromFile = Model.ImportOnnx(path))
                using (var fromBytes = Model.ImportOnnx(bytes, new OnnxImportOptions()))
                {
                    foreach (var other in new[] { fromFile, fromBytes })
                    {
                        Assert.AreEqual(model.Describe(), other.Describe());
                        Assert.AreEqual(Bits.Of(model.GetParameters()), Bits.Of(other.GetParameters()));
                        Assert.AreEqual(Bits.Of(Outputs(model)), Bits.Of(Outputs(other)));
                    }
                }
            }
        }

        [Test]
        public void BrokenBytesAndMissingFilesGiveTheirStatus()
        {
            using (var model = new Model(Spec))
            {
                byte[] bytes = model.ExportOnnx();
                var half = new byte[bytes.Length / 2];
                Array.Copy(bytes, half, half.Length);
                var e = Assert.Throws<SnnException>(() => Model.ImportOnnx(half));
                Assert.AreEqual(Status.FileFormat, e.Status, e.Message);
                e = Assert.Throws<SnnException>(() => Model.ImportOnnx("no-such-file.onnx"));
                Assert.AreEqual(Status.Io, e.Status, e.Message);
            }
        }
    }
}
