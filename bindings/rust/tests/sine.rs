//! The getting-started example as a test: Adam fits sin(x) on [0, 2π].

use snn::{Hyperparameter, Loss, Model, OptimiserKind};

#[test]
fn adam_fits_a_sine() {
    const N: usize = 512;
    let x: Vec<f32> = (0..N).map(|i| (2.0 * std::f64::consts::PI * i as f64 / (N - 1) as f64) as f32).collect();
    let y: Vec<f32> = x.iter().map(|v| v.sin()).collect();

    let model = Model::new("input 1; dense 10 tanh; dense 10 sigmoid; dense 1").unwrap();
    model.init(42).unwrap();
    let mut fwd = model.preallocate(N).unwrap();
    let mut bwd = model.preallocate_grads(N).unwrap();
    let mut adam = model.optimiser(OptimiserKind::Adam).unwrap();
    adam.set(Hyperparameter::LearningRate, 0.01).unwrap();
    assert_eq!(adam.get(Hyperparameter::LearningRate).unwrap(), 0.01);

    fwd.set_inputs(&x).unwrap();
    bwd.set_targets(&y).unwrap();
    let mut first = f32::NAN;
    for _ in 0..3000 {
        fwd.forward().unwrap();
        let loss = bwd.backprop(&mut fwd, Loss::Mse).unwrap();
        if first.is_nan() {
            first = loss;
        }
        adam.step(&model, &bwd).unwrap();
    }
    assert_eq!(adam.step_count().unwrap(), 3000);

    fwd.forward().unwrap();
    let out = fwd.outputs().unwrap();
    assert_eq!(out.len(), N);
    let mse = out.iter().zip(&y).map(|(o, t)| ((o - t) as f64).powi(2)).sum::<f64>() / N as f64;
    assert!(mse < 1e-3, "final MSE {mse} (first loss {first})");
    assert!((mse as f32) < first / 100.0);
}
