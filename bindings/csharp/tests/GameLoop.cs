// The game loop of the README's Unity and Godot sections as a test: a fixed
// timestep, a batch-1 inference per fixed step, a training step every
// TrainEvery frames on a batch drawn from a replay buffer. After a warm-up it
// counts, over the measured frames, the managed bytes this thread allocates
// (GC.GetAllocatedBytesForCurrentThread) and the native heap allocations of
// the whole process (malloc, calloc, realloc, memalign: tests/core/alloc_counter.c,
// when that library is preloaded), and requires both to be 0.
//
//   mono GameLoop.exe [--require-native-count] [--require-package]
//                     [--allocate-per-frame | --malloc-per-frame]
// --require-native-count: fail when the counter is not preloaded.
// --require-package: fail unless the library was loaded from a package layout
//   (runtimes/RID/native/ beside Snn.dll or two folders up).
// --allocate-per-frame, --malloc-per-frame: allocate deliberately each frame
//   (managed, native), to show that the check rejects it.
using System;
using System.Runtime.InteropServices;
using Snn;

static class GameLoop
{
    const int StateSize = 8, Actions = 4, TrainBatch = 32, Capacity = 1024, TrainEvery = 4;
    const int WarmupFrames = 300, MeasuredFrames = 1200;
    const double FixedStep = 1.0 / 60;

    [DllImport("libdl.so.2")] static extern IntPtr dlsym(IntPtr handle, string name);
    delegate void CounterStart();
    delegate UIntPtr CounterStop();

    // The replay buffer: states and the action a scripted teacher takes in them.
    static readonly float[] replayStates = new float[Capacity * StateSize];
    static readonly int[] replayActions = new int[Capacity];
    static int replayCount, replayNext;
    static readonly long[] batchIndices = new long[TrainBatch];
    static readonly float[] state = new float[StateSize];
    static ulong rng = 88172645463325252UL;

    static float Uniform()
    {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        return (rng >> 40) / (float)(1 << 24);
    }

    // The teacher: the action of the largest of four sums of the state.
    static int Teacher(float[] s, int offset)
    {
        int best = 0;
        float bestValue = float.NegativeInfinity;
        for (int a = 0; a < Actions; a++)
        {
            float v = s[offset + 2 * a] - 0.5f * s[offset + 2 * a + 1];
            if (v > bestValue) { bestValue = v; best = a; }
        }
        return best;
    }

    static int Main(string[] args)
    {
        bool requireCount = Array.IndexOf(args, "--require-native-count") >= 0;
        bool requirePackage = Array.IndexOf(args, "--require-package") >= 0;
        bool allocate = Array.IndexOf(args, "--allocate-per-frame") >= 0;
        bool mallocEachFrame = Array.IndexOf(args, "--malloc-per-frame") >= 0;

        CounterStart counterStart = null;
        CounterStop counterStop = null;
        try
        {
            IntPtr start = dlsym(IntPtr.Zero, "alloc_counter_start"), stop = dlsym(IntPtr.Zero, "alloc_counter_stop");
            if (start != IntPtr.Zero && stop != IntPtr.Zero)
            {
                counterStart = (CounterStart)Marshal.GetDelegateForFunctionPointer(start, typeof(CounterStart));
                counterStop = (CounterStop)Marshal.GetDelegateForFunctionPointer(stop, typeof(CounterStop));
            }
        }
        catch (DllNotFoundException) { }
        if (requireCount && counterStart == null)
        {
            Console.WriteLine("FAIL: the allocation counter is not preloaded");
            return 1;
        }

        // The first call into snn is a static one (Mono resolves the library
        // when it compiles the first method calling into it).
        Console.WriteLine("libsnn " + Library.VersionString + " loaded from " +
                          (NativeLibraryName.LoadedFromPackage ?? "the loader's path"));
        if (requirePackage && NativeLibraryName.LoadedFromPackage == null)
        {
            Console.WriteLine("FAIL: the library was not loaded from the package layout");
            return 1;
        }

        using (var model = new Model("input 8; dense 32 relu; dense 32 relu; dense 4"))
        using (var act = model.PreallocateInference(1))    // the per-frame policy
        using (var train = model.Preallocate(TrainBatch))  // training mode
        using (var grads = model.PreallocateGrads(TrainBatch))
        using (var adam = model.CreateOptimiser(OptimiserKind.Adam))
        {
            model.Init(11);
            adam.Set(Hyperparameter.LearningRate, 0.003);
            for (int i = 0; i < StateSize; i++) state[i] = Uniform();

            double accumulator = 0;
            int frames = WarmupFrames + MeasuredFrames, fixedSteps = 0, trainSteps = 0;
            int agreeFirst = 0, agreeLast = 0, decidedFirst = 0, decidedLast = 0;
            float firstLoss = float.NaN, lastLoss = float.NaN;
            long managedBefore = 0, managedAfter = 0;
            ulong nativeAllocations = 0;
            for (int frame = 0; frame < frames; frame++)
            {
                if (frame == WarmupFrames)
                {
                    managedBefore = GC.GetAllocatedBytesForCurrentThread();
                    if (counterStart != null) counterStart();
                }
                // A frame takes 1/60 s or 1/40 s: one or two fixed steps.
                accumulator += frame % 3 == 2 ? 1.0 / 40 : 1.0 / 60;
                while (accumulator >= FixedStep)
                {
                    accumulator -= FixedStep;
                    fixedSteps++;
                    // Batch-1 inference: the policy's action for this state.
                    ReadOnlyFloatView q = act.Predict(state);
                    int action = q.ArgMax(0);
                    int teacher = Teacher(state, 0);
                    if (frame < WarmupFrames) { decidedFirst++; if (action == teacher) agreeFirst++; }
                    else if (frame >= frames - 300) { decidedLast++; if (action == teacher) agreeLast++; }
                    // Remember the state and the teacher's action; move on.
                    Array.Copy(state, 0, replayStates, replayNext * StateSize, StateSize);
                    replayActions[replayNext] = teacher;
                    replayNext = (replayNext + 1) % Capacity;
                    if (replayCount < Capacity) replayCount++;
                    for (int i = 0; i < StateSize; i++) state[i] = 0.5f * state[i] + Uniform();
                }
                // Between frames: a training step every TrainEvery frames.
                if (frame % TrainEvery == 0 && replayCount >= TrainBatch)
                {
                    for (int b = 0; b < TrainBatch; b++) batchIndices[b] = (long)(Uniform() * replayCount);
                    train.SetInputsGather(replayStates, batchIndices);
                    grads.SetLabelsGather(replayActions, batchIndices);
                    train.Forward();
                    float loss = grads.Backprop(train, Loss.LogitCrossEntropy);
                    adam.Step(grads);
                    if (trainSteps == 0) firstLoss = loss;
                    lastLoss = loss;
                    trainSteps++;
                }
                if (allocate) GC.KeepAlive(new float[4]);
                if (mallocEachFrame) Marshal.FreeHGlobal(Marshal.AllocHGlobal(64));
            }
            managedAfter = GC.GetAllocatedBytesForCurrentThread();
            if (counterStop != null) nativeAllocations = counterStop().ToUInt64();

            long managed = managedAfter - managedBefore;
            Console.WriteLine(frames + " frames (" + WarmupFrames + " warm-up), " + fixedSteps + " fixed steps of batch-1 inference, " +
                              trainSteps + " training steps of batch " + TrainBatch);
            Console.WriteLine("loss " + firstLoss.ToString("F4") + " -> " + lastLoss.ToString("F4") +
                              "; policy agrees with the teacher " + agreeFirst + "/" + decidedFirst + " (warm-up) -> " +
                              agreeLast + "/" + decidedLast + " (last 300 frames)");
            Console.WriteLine("measured over " + MeasuredFrames + " frames: managed bytes allocated " + managed +
                              " (" + ((double)managed / MeasuredFrames).ToString("F2") + " per frame), native allocations " +
                              (counterStop != null ? nativeAllocations + " (" + ((double)nativeAllocations / MeasuredFrames).ToString("F2") + " per frame)"
                                                   : "not counted (the counter is not preloaded)"));
            bool ok = true;
            if (managed != 0) { Console.WriteLine("FAIL: managed allocations after warm-up"); ok = false; }
            if (counterStop != null && nativeAllocations != 0) { Console.WriteLine("FAIL: native allocations after warm-up"); ok = false; }
            if (!(lastLoss < 0.5f * firstLoss)) { Console.WriteLine("FAIL: the loss did not halve"); ok = false; }
            if (agreeLast * 10 < decidedLast * 8) { Console.WriteLine("FAIL: the policy agrees with the teacher on fewer than 80% of the last steps"); ok = false; }
            return ok ? 0 : 1;
        }
    }
}
