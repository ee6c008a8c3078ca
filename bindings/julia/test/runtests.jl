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
end
