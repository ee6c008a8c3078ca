// The library's file name on each platform, where a package puts it
// (runtimes/<rid>/native/), and the code that loads it from there for the
// binding's [DllImport("snn")]: a resolver on .NET 5 and later, a preload
// through the platform's loader on Mono and the .NET Framework.
using System;
using System.IO;
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

        /// <summary>The unversioned file name (what .NET's own probing looks for,
        /// and what Unity's plugin folders hold): snn.dll, libsnn.so, libsnn.dylib.</summary>
        public static string Unversioned(PlatformID platform)
        {
            string versioned = For(platform);
            if (versioned == "libsnn.so.0") return "libsnn.so";
            if (versioned == "libsnn.0.dylib") return "libsnn.dylib";
            return versioned;
        }

        /// <summary>The running platform, with macOS told apart from other Unixes.</summary>
        public static PlatformID CurrentPlatform
        {
            get
            {
                if (RuntimeInformation.IsOSPlatform(OSPlatform.OSX)) return PlatformID.MacOSX;
                return Environment.OSVersion.Platform;
            }
        }

        /// <summary>The NuGet runtime identifier of this process: linux-x64,
        /// linux-arm64, win-x64, osx-arm64, ...</summary>
        public static string RuntimeIdentifier
        {
            get
            {
                string os;
                switch (CurrentPlatform)
                {
                    case PlatformID.Win32NT: case PlatformID.Win32S: case PlatformID.Win32Windows: case PlatformID.WinCE:
                        os = "win"; break;
                    case PlatformID.MacOSX: os = "osx"; break;
                    default: os = "linux"; break;
                }
                switch (RuntimeInformation.ProcessArchitecture)
                {
                    case Architecture.X64: return os + "-x64";
                    case Architecture.X86: return os + "-x86";
                    case Architecture.Arm64: return os + "-arm64";
                    default: return os + "-arm";
                }
            }
        }

        /// <summary>Where a package puts the library, relative to the directory of
        /// Snn.dll, in the order they are tried: runtimes/RID/native/ beside the
        /// assembly (a program's output directory), then ../../runtimes/RID/native/
        /// (the assembly still in the package's lib/TFM/ folder, as `nuget install`
        /// leaves it). Each directory holds the versioned or the unversioned file.</summary>
        public static string[] PackageCandidates(string assemblyDirectory)
        {
            if (string.IsNullOrEmpty(assemblyDirectory)) return new string[0];
            var platform = CurrentPlatform;
            string rid = RuntimeIdentifier;
            string[] dirs =
            {
                Path.Combine(assemblyDirectory, "runtimes", rid, "native"),
                Path.Combine(assemblyDirectory, "..", "..", "runtimes", rid, "native"),
            };
            string[] names = { For(platform), Unversioned(platform) };
            var result = new string[dirs.Length * names.Length];
            int n = 0;
            foreach (var d in dirs)
                foreach (var f in names)
                    result[n++] = Path.GetFullPath(Path.Combine(d, f));
            return result;
        }

        /// <summary>The directory of Snn.dll, or null where the assembly has no
        /// file (loaded from bytes; IL2CPP, where the plugin folders decide).</summary>
        static string AssemblyDirectory()
        {
            try
            {
                string location = typeof(NativeLibraryName).Assembly.Location;
                return string.IsNullOrEmpty(location) ? null : Path.GetDirectoryName(location);
            }
            catch (Exception)
            {
                return null;
            }
        }

        /// <summary>The library file this process loaded from a package layout
        /// (see PackageCandidates), or null when none was there and the library
        /// came from the loader's own path (installed, LD_LIBRARY_PATH, Unity's
        /// plugin folders, Mono's dllmap).</summary>
        public static string LoadedFromPackage { get; private set; }

#if !NET5_0_OR_GREATER
        static readonly object preloadLock = new object();
        static bool preloaded;

        /// <summary>Mono and the .NET Framework: loads the library from the
        /// package layout, if one is there, by its full path through the
        /// platform's loader (dlopen, LoadLibrary), before the first call. The
        /// binding's [DllImport("snn")] (Mono maps it to libsnn.so.0 through
        /// Snn.dll.config) then finds the library already loaded: the dynamic
        /// loader matches the name with the loaded file's soname (on Windows,
        /// its module name). Without a package layout it does nothing, and the
        /// loader's path decides as before. Called by Library's static
        /// constructor, which runs before any call into the library.</summary>
        internal static void Preload()
        {
            lock (preloadLock)
            {
                if (preloaded) return;
                preloaded = true;
                foreach (var path in PackageCandidates(AssemblyDirectory()))
                {
                    if (!File.Exists(path)) continue;
                    if (LoadByPath(path))
                    {
                        LoadedFromPackage = path;
                        return;
                    }
                }
            }
        }

        const int RTLD_NOW = 2, RTLD_GLOBAL = 0x100, RTLD_GLOBAL_MACOS = 8;

        [DllImport("libdl.so.2", EntryPoint = "dlopen")]
        static extern IntPtr DlopenLibdl(string path, int flags);
        [DllImport("libc", EntryPoint = "dlopen")]
        static extern IntPtr DlopenLibc(string path, int flags);
        [DllImport("/usr/lib/libSystem.B.dylib", EntryPoint = "dlopen")]
        static extern IntPtr DlopenMacOS(string path, int flags);
        [DllImport("kernel32", EntryPoint = "LoadLibraryW", CharSet = CharSet.Unicode)]
        static extern IntPtr LoadLibraryW(string path);

        static bool LoadByPath(string path)
        {
            try
            {
                switch (CurrentPlatform)
                {
                    case PlatformID.Win32NT: case PlatformID.Win32S: case PlatformID.Win32Windows: case PlatformID.WinCE:
                        return LoadLibraryW(path) != IntPtr.Zero;
                    case PlatformID.MacOSX:
                        return DlopenMacOS(path, RTLD_NOW | RTLD_GLOBAL_MACOS) != IntPtr.Zero;
                    default:
                        try
                        {
                            return DlopenLibdl(path, RTLD_NOW | RTLD_GLOBAL) != IntPtr.Zero;
                        }
                        catch (DllNotFoundException)
                        {
                            return DlopenLibc(path, RTLD_NOW | RTLD_GLOBAL) != IntPtr.Zero;  // musl
                        }
                }
            }
            catch (Exception)
            {
                return false;   // no loader to call: the DllImport's own search decides
            }
        }
#endif

#if NET5_0_OR_GREATER
        // .NET looks for "snn" as snn.dll on Windows but as libsnn.so and
        // snn.so on Linux (libsnn.dylib on macOS), which a runtime-only
        // installation lacks: the resolver tries a package layout beside the
        // assembly, then the versioned file, then the runtime's own probing. (Mono maps the name through
        // Snn.dll.config instead.)
        [System.Runtime.CompilerServices.ModuleInitializer]
        internal static void InstallResolver()
        {
            NativeLibrary.SetDllImportResolver(typeof(NativeLibraryName).Assembly, Resolve);
        }

        static IntPtr Resolve(string name, System.Reflection.Assembly assembly, DllImportSearchPath? searchPath)
        {
            if (name != Import) return IntPtr.Zero;
            IntPtr handle;
            // A package layout beside the assembly first (an application without
            // a deps.json that lists it), then the versioned name on the loader's
            // path; IntPtr.Zero leaves it to .NET's probing (deps.json's
            // runtimes/RID/native/libsnn.so, snn.dll).
            foreach (var path in PackageCandidates(AssemblyDirectory()))
            {
                if (File.Exists(path) && NativeLibrary.TryLoad(path, out handle))
                {
                    LoadedFromPackage = path;
                    return handle;
                }
            }
            PlatformID platform = OperatingSystem.IsMacOS() ? PlatformID.MacOSX : Environment.OSVersion.Platform;
            return NativeLibrary.TryLoad(For(platform), assembly, searchPath, out handle) ? handle : IntPtr.Zero;
        }
#endif
    }
}
