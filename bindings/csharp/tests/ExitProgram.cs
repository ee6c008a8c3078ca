// A short program that uses the binding as an application does and then exits:
// the library's worker threads busy on a small CNN, a few training steps, the
// model and one cache disposed, and the cache and optimiser that still hold the
// model's native handle left to the finalizers at exit.
// tests/bindings/run_csharp.sh runs it many times: every run must exit with 0
// (the runtime's shutdown must not crash on the library's threads).
using System;
using Snn;

static class ExitProgram
{
    static int Main()
    {
        Library.NumThreads = 2;
        var model = new Model("input 16x16x3; conv 3x3 16 relu; maxpool 2; flatten; dense 10");
        var fwd = model.Preallocate(32);
        var bwd = model.PreallocateGrads(32);
        var adam = model.CreateOptimiser(OptimiserKind.Adam);
        var x = new float[32 * 16 * 16 * 3];
        for (int i = 0; i < x.Length; i++) x[i] = (i * 37 % 101) / 101f - 0.5f;
        var labels = new int[32];
        for (int i = 0; i < labels.Length; i++) labels[i] = i % 10;
        fwd.SetInputs(x);
        bwd.SetLabels(labels);
        float first = 0, last = 0;
        for (int step = 0; step < 5; step++)
        {
            fwd.Forward();
            last = bwd.Backprop(fwd, Loss.LogitCrossEntropy);
            if (step == 0) first = last;
            adam.Step(bwd);
        }
        bwd.Dispose();
        model.Dispose();
        if (!(last < first))
        {
            Console.Error.WriteLine("the loss did not fall: " + first + " -> " + last);
            return 1;
        }
        return 0;
    }
}
