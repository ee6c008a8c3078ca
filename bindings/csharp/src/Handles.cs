// The base class of the SafeHandles of snn's handles, written by hand; the
// handle classes themselves (one per opaque type of include/snn.h, each calling
// its destroy function) are generated into NativeMethods.cs.
using System;
using System.Runtime.InteropServices;

namespace Snn
{
    /// <summary>An owned snn handle; ReleaseHandle calls its destroy function.
    /// The handle of a cache or optimiser also holds a reference
    /// (DangerousAddRef) on its model's handle, taken by Own and given back
    /// after its own destroy: the model's native memory is freed only after
    /// every handle made from it, whatever order Dispose calls or finalizers
    /// run in.</summary>
    internal abstract class SnnHandle : SafeHandle
    {
        ModelHandle owner;

        protected SnnHandle() : base(IntPtr.Zero, true) { }
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        /// <summary>Takes a reference on the handle of the model this handle was
        /// made from (called once, right after the library created it).</summary>
        internal void Own(ModelHandle model)
        {
            bool added = false;
            model.DangerousAddRef(ref added);
            if (added) owner = model;
        }

        protected abstract void Destroy(IntPtr h);

        protected sealed override bool ReleaseHandle()
        {
            Destroy(handle);
            var model = owner;
            owner = null;
            if (model != null) model.DangerousRelease();
            Library.SettleLogReceiverException();
            return true;
        }
    }
}
