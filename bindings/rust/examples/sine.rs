//! The getting-started example: fit sin(x) on [0, 2π] with a small MLP
//! trained by Adam.
//!
//!     SNN_LIB_DIR=/path/to/build cargo run --offline --example sine

use snn::{Hyperparameter, Loss, Model, OptimiserKind};

fn main() -> Result<(), snn::Error> {
    const N: usize = 512;
    let x: Vec<f32> = (0..N).map(|i| (2.0 * std::f64::consts::PI * i as f64 / (N - 1) as f64) as f32).collect();
    let y: Vec<f32> = x.iter().map(|v| v.sin()).collect();

    let model = Model::new("input 1; dense 10 tanh; dense 10 sigmoid; dense 1")?;
    model.init(42)?;
    let mut fwd = model.preallocate(N)?;
    let mut bwd = model.preallocate_grads(N)?;
    let mut adam = model.optimiser(OptimiserKind::Adam)?;
    adam.set(Hyperparameter::LearningRate, 0.01)?;

    // The whole data set is one batch: inputs and targets are set once.
    fwd.set_inputs(&x)?;
    bwd.set_targets(&y)?;
    for epoch in 1..=3000 {
        fwd.forward()?;
        let loss = bwd.backprop(&mut fwd, Loss::Mse)?;
        adam.step(&model, &bwd)?;
        if epoch == 1 || epoch % 500 == 0 {
            println!("epoch {epoch:4}  loss {loss:.6}");
        }
    }

    fwd.forward()?;
    let out = fwd.outputs()?;
    let mse = out.iter().zip(&y).map(|(o, t)| ((o - t) as f64).powi(2)).sum::<f64>() / N as f64;
    println!("final MSE {mse:.6}");
    if mse >= 1e-3 {
        std::process::exit(1);
    }
    Ok(())
}
