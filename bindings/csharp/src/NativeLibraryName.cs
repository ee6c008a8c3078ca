// The library's file name on each platform, and on .NET 5 and later the
// resolver that loads it for the binding's [DllImport("snn")].
using System;
using System.Runtime.InteropServices;

namespace Snn
{
    /// <summary>The file each platform loads for the library's [DllImport("snn")]:
    /// snn.dll on Windows (found next to the program or on PATH), libsnn.so.0
    /// on Linux (the runtime library's soname, on the loader path), libsnn.0.dylib
    /// on macOS. A user's program names none of them: the same program runs on
    /// each platform.</summary>
    public static class NativeLibraryName
    {
        /// <summary>The name every [DllImport] of the binding uses.</summary>
        public const string Import = "snn";

        /// <summary>The library's file name on a platform.</summary>
        public static string For(PlatformID platform)
        {
            switch (platform)
            {
                case PlatformID.Win32NT:
                case PlatformID.Win32S:
                case PlatformID.Win32Windows:
                case PlatformID.WinCE:
                    return "snn.dll";
                case PlatformID.MacOSX:
                    return "libsnn.0.dylib";
                default:
                    return "libsnn.so.0";
            }
        }

#if NET5_0_OR_GREATER
        // .NET looks for "snn" as snn.dll on Windows but as libsnn.so and
        // snn.so on Linux (libsnn.dylib on macOS), which a runtime-only
        // installation lacks: the resolver tries the versioned file first,
        // then the runtime's own probing. (Mono maps the name through
        // Snn.dll.config instead.)
        [System.Runtime.CompilerServices.ModuleInitializer]
        internal static void InstallResolver()
        {
            NativeLibrary.SetDllImportResolver(typeof(NativeLibraryName).Assembly, Resolve);
        }

        static IntPtr Resolve(string name, System.Reflection.Assembly assembly, DllImportSearchPath? searchPath)
        {
            if (name != Import) return IntPtr.Zero;
            PlatformID platform = OperatingSystem.IsMacOS() ? PlatformID.MacOSX : Environment.OSVersion.Platform;
            IntPtr handle;
            return NativeLibrary.TryLoad(For(platform), assembly, searchPath, out handle) ? handle : IntPtr.Zero;
        }
#endif
    }
}
