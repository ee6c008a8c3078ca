//! Learns XOR with a tiny MLP and prints the result; exits with 1 when the
//! loss stays above 0.01.

use snn::{Hyperparameter, Loss, Model, OptimiserKind};

fn main() -> Result<(), snn::Error> {
    let mut model = Model::new("input 2; dense 8 tanh; dense 1")?;
    model.init(1)?;
    let mut fwd = model.preallocate(4)?;
    let mut bwd = model.preallocate_grads(4)?;
    let mut adam = model.optimiser(OptimiserKind::Adam)?;
    adam.set(Hyperparameter::LearningRate, 0.05)?;
    fwd.set_inputs(&[0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0])?;
    bwd.set_targets(&[0.0, 1.0, 1.0, 0.0])?;
    let mut loss = f32::INFINITY;
    for _ in 0..500 {
        fwd.forward(&model)?;
        loss = bwd.backprop(&mut fwd, &model, Loss::Mse)?;
        adam.step(&mut model, &mut bwd)?;
    }
    fwd.forward(&model)?;
    println!("snn {}: XOR after 500 Adam steps, MSE {loss:.2e}, outputs {:?}", snn::version_string(), fwd.outputs()?);
    if loss >= 0.01 {
        eprintln!("the loss stayed above 0.01");
        std::process::exit(1);
    }
    Ok(())
}
