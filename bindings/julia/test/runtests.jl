# Tests of SNN.jl against the library (SNN_LIBRARY or libsnn on the loader path).
using SNN
using Test

@testset "SNN.jl" begin
    @testset "spec from SimpleNNs-style layers" begin
        @test SNN.spec(Static(1), Dense(10, activation_fn=tanh), Dense(1)) ==
              "input 1; dense 10 tanh; dense 1 identity"
        @test SNN.spec(Static((28, 28, 1)), Conv((5, 5), 16, activation_fn=relu), MaxPool((2, 2)), Flatten(),
                       Dense(10)) ==
              "input 28x28x1; conv 5x5 16 relu stride=1x1 pad=0x0; maxpool 2x2; flatten; dense 10 identity"
        @test_throws ArgumentError SNN.spec(Static(1), Dense(1, activation_fn=exp))
    end

    @testset "sine example" begin
        N = 512
        x = reshape(Float32.(range(0, 2π, length=N)), 1, N)
        y = sin.(x)
        model = chain(Static(1), Dense(10, activation_fn=tanh), Dense(10, activation_fn=sigmoid), Dense(1))
        initialise!(model; seed=42)
        fwd = preallocate(model, N)
        bwd = preallocate_grads(model, N)
        opt = AdamOptimiser(model; lr=0.01)
        set_inputs!(fwd, x)
        loss = MSELoss(y)
        first = 0.0f0
        for epoch in 1:3000
            forward!(fwd, model)
            l = backprop!(bwd, fwd, model, loss)
            epoch == 1 && (first = l)
            update!(model, bwd, opt)
        end
        forward!(fwd, model)
        out = get_outputs(fwd)
        @test size(out) == (1, N)
        mse = sum(abs2, out .- y) / N
        @test mse < 1e-3
        @test mse < first / 100
        @test SNN.step_count(opt) == 3000
        foreach(close, (opt, bwd, fwd, model))
    end

    @testset "CNN forward and backward" begin
        model = chain(Static((8, 8, 1)), Conv((3, 3), 4, activation_fn=relu), MaxPool((2, 2)), Flatten(), Dense(3))
        @test SNN.layer_shape(model, 1) == (4, 6, 6)
        p = parameters(model)
        @test length(p) == 4 * 9 + 4 + 36 * 3 + 3
        x = rand(Float32, 8, 8, 1, 4)
        fwd = preallocate(model, 4)
        bwd = preallocate_grads(model, 4)
        set_inputs!(fwd, x)
        forward!(fwd, model)
        @test size(get_outputs(fwd)) == (3, 4)
        l = backprop!(bwd, fwd, model, LogitCrossEntropyLoss([1, 2, 3, 2], 3))
        @test l > 0
        @test length(gradients(bwd)) == length(p)
        p[1] = 0.5f0
        @test SNN.get_parameters(model)[1] == 0.5f0
    end

    @testset "errors carry status and message" begin
        e = try
            chain(Static(4), Dense(0))
        catch err
            err
        end
        @test e isa SNNError
        @test occursin("snn_model_create", e.message)
        model = chain(Static(3), Dense(2))
        fwd = preallocate(model, 2)
        e = try
            set_inputs!(fwd, zeros(Float32, 5, 1)); forward!(fwd, model)
        catch err
            err
        end
        @test e isa SNNError && e.status == 5
        @test_throws ArgumentError LogitCrossEntropyLoss([0], 2)
        close(fwd)
        @test_throws ArgumentError forward!(fwd, model)
        if SNN.gpu_count() == 0
            @test_throws SNNError gpu(model)
        end
    end

    @testset "model files" begin
        model = chain(Static(3), Dense(2))
        initialise!(model; seed=7)
        path = tempname() * ".safetensors"
        save(path, model)
        again = load(path)
        @test SNN.get_parameters(again) == SNN.get_parameters(model)
        rm(path)
    end

    # A model, its caches and an Adam optimiser after one step, and what they hold.
    function trained()
        model = chain(Static((6, 6, 1)), Conv((3, 3), 2, activation_fn=relu), MaxPool((2, 2)), Flatten(), Dense(3))
        initialise!(model; seed=5)
        fwd = preallocate(model, 2)
        bwd = preallocate_grads(model, 2)
        opt = AdamOptimiser(model; lr=0.05)
        x = reshape(Float32[((i * 7 % 13) - 6) / 6 for i in 0:71], 6, 6, 1, 2)
        loss = LogitCrossEntropyLoss([1, 3], 3)
        set_inputs!(fwd, x)
        forward!(fwd, model)
        backprop!(bwd, fwd, model, loss)
        update!(model, bwd, opt)
        forward!(fwd, model)
        (model=model, fwd=fwd, bwd=bwd, opt=opt, x=x, loss=loss, outputs=copy(get_outputs(fwd)),
         gradients=copy(gradients(bwd)), parameters=SNN.get_parameters(model))
    end

    # Every handle still open answers with what it held; a call given a closed
    # handle throws an ArgumentError.
    function check_survivors(t)
        if isopen(t.model)
            @test SNN.get_parameters(t.model) == t.parameters
        end
        if isopen(t.fwd)
            @test SNN.batch_size(t.fwd).batch == 2
            @test get_outputs(t.fwd) == t.outputs
            if isopen(t.model)
                forward!(t.fwd, t.model)
                @test get_outputs(t.fwd) == t.outputs
            else
                @test_throws ArgumentError forward!(t.fwd, t.model)
            end
        end
        if isopen(t.bwd)
            @test gradients(t.bwd) == t.gradients
            if !isopen(t.model) || !isopen(t.fwd)
                @test_throws ArgumentError backprop!(t.bwd, t.fwd, t.model, t.loss)
            end
        end
        if isopen(t.opt)
            @test SNN.step_count(t.opt) == 1
            @test SNN.hyperparameter(t.opt, :lr) == 0.05
            if !isopen(t.model) || !isopen(t.bwd)
                @test_throws ArgumentError update!(t.model, t.bwd, t.opt)
            end
            @test SNN.step_count(t.opt) == 1
        end
    end

    permutations(v) = length(v) <= 1 ? [v] : [[v[i]; p] for i in eachindex(v) for p in permutations(deleteat!(copy(v), i))]

    @testset "handles closed in every order" begin
        orders = permutations([:model, :fwd, :bwd, :opt])
        @test length(unique(orders)) == 24
        for order in orders
            t = trained()
            for name in order
                close(getfield(t, name))
                @test !isopen(getfield(t, name))
                check_survivors(t)
            end
        end
    end

    @testset "a cache answers after its model is closed" begin
        t = trained()
        close(t.model)
        e = try
            forward!(t.fwd, t.model)
        catch err
            err
        end
        @test e isa ArgumentError && occursin("Model has been closed", e.msg)
        @test get_outputs(t.fwd) == t.outputs
        set_inputs!(t.fwd, t.x[:, :, :, 2:2])
        @test SNN.batch_size(t.fwd).batch == 1
        @test_throws SNNError set_inputs!(t.fwd, zeros(Float32, 35, 1))
        @test gradients(t.bwd) == t.gradients
        SNN.set_gradients!(t.bwd, zeros(Float32, length(t.gradients)))
        @test all(iszero, gradients(t.bwd))
        reset!(t.opt)
        @test SNN.step_count(t.opt) == 0
        foreach(close, (t.opt, t.bwd, t.fwd))
        close(t.fwd)
        @test_throws ArgumentError get_outputs(t.fwd)
    end

    @testset "handles left to the finalizers are freed in any order" begin
        for round in 1:5
            foreach(_ -> trained(), 1:40)
            GC.gc()
        end
        t = trained()
        check_survivors(t)
        foreach(close, (t.model, t.fwd, t.bwd, t.opt))
    end

    @testset "a throwing log callback is contained and logging goes on" begin
        failing_call() = try
            SNN.set_num_threads(0)
            nothing
        catch err
            err
        end
        seen = String[]
        try
            SNN.set_log_callback((level, message) -> error("the receiver refused: ", message))
            e = failing_call()
            @test e isa SNNError && e.status == 2
            thrown = SNN.take_log_callback_error()
            @test thrown isa ErrorException && startswith(thrown.msg, "the receiver refused: snn_set_num_threads")
            @test SNN.take_log_callback_error() === nothing

            # Many more failing calls on several threads while the callback keeps
            # throwing: none blocks (a deadlock fails after 30 s), each throws.
            tasks = [Threads.@spawn [failing_call() for _ in 1:50] for _ in 1:4]
            finished = timedwait(() -> all(istaskdone, tasks), 30.0)
            @test finished === :ok
            if finished === :ok
                errors = reduce(vcat, fetch.(tasks))
                @test length(errors) == 200
                @test all(err -> err isa SNNError && err.status == 2, errors)
            end
            @test occursin("snn_set_num_threads", SNN.take_log_callback_error().msg)

            SNN.set_log_callback((level, message) -> push!(seen, message))
            e = failing_call()
            @test seen == [e.message]
        finally
            SNN.set_log_callback(nothing)
        end
        failing_call()
        @test length(seen) == 1
        @test SNN.take_log_callback_error() === nothing
    end
end
