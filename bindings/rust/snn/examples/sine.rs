//! The getting-started example: fit sin(x) on [0, 2π] with a small MLP
//! trained by Adam.
//!
//!     SNN_LIB_DIR=/path/to/snn/build cargo run --offline --example sine

use snn::{Hyperparameter, Loss, Model, OptimiserKind};

fn main() -> Result<(), snn::Error> {
    const N: usize = 256;
    let x: Vec<f32> = (0..N).map(|i| i as f32 * std::f32::consts::TAU / (N - 1) as f32).collect();
    let y: Vec<f32> = x.iter().map(|v| v.sin()).collect();

    let mut model = Model::new("input 1; dense 16 tanh; dense 16 tanh; dense 1")?;
    model.init(42)?;
    let mut fwd = model.preallocate(N)?;
    let mut bwd = model.preallocate_grads(N)?;
    let mut adam = model.optimiser(OptimiserKind::Adam)?;
    adam.set(Hyperparameter::LearningRate, 0.01)?;
    fwd.set_inputs(&x)?;
    bwd.set_targets(&y)?;
    for step in 0..=2000 {
        fwd.forward(&model)?;
        let loss = bwd.backprop(&mut fwd, &model, Loss::Mse)?;
        if step % 500 == 0 {
            println!("step {step:4}  MSE {loss:.6}");
        }
        adam.step(&mut model, &mut bwd)?;
    }
    Ok(())
}
