// The library's file per platform: the binding's [DllImport("snn")] loads
// snn.dll on Windows, libsnn.so.0 on Linux and libsnn.0.dylib on macOS, so a
// program runs unchanged on each; on Mono the name goes through
// Snn.dll.config, which must name the same file the binding states.
using System;
using System.IO;
using System.Xml;
using NUnit.Framework;
using Snn;

namespace Snn.Tests
{
    [TestFixture]
    public class LibraryFileNames
    {
        [Test]
        public void WindowsLoadsSnnDll()
        {
            Assert.AreEqual("snn.dll", NativeLibraryName.For(PlatformID.Win32NT));
        }

        [Test]
        public void LinuxLoadsTheSoname()
        {
            Assert.AreEqual("libsnn.so.0", NativeLibraryName.For(PlatformID.Unix));
        }

        [Test]
        public void MacOsLoadsTheVersionedDylib()
        {
            Assert.AreEqual("libsnn.0.dylib", NativeLibraryName.For(PlatformID.MacOSX));
        }

        [Test]
        public void EveryImportUsesOneName()
        {
            Assert.AreEqual("snn", NativeLibraryName.Import);
        }

        [Test]
        public void MonosMapNamesTheLinuxFile()
        {
            string config = Path.Combine(Path.GetDirectoryName(typeof(Model).Assembly.Location), "Snn.dll.config");
            var doc = new XmlDocument();
            doc.Load(config);
            XmlNode map = doc.SelectSingleNode("/configuration/dllmap");
            Assert.IsNotNull(map, "Snn.dll.config has no dllmap");
            Assert.AreEqual(NativeLibraryName.Import, map.Attributes["dll"].Value);
            Assert.AreEqual(NativeLibraryName.For(PlatformID.Unix), map.Attributes["target"].Value);
        }
    }
}
