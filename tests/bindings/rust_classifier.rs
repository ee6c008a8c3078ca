//! A classifier as a new crate writes it: points of the plane in three
//! classes (the sector of their angle), trained with Adam, then predicted in
//! inference mode. Exits with 1 when the held-out accuracy stays below 90%.

use snn::{Hyperparameter, Loss, Model, OptimiserKind};

/// `n` points on a grid of the square [-1, 1]^2 (shifted by `offset`), `[n][2]`,
/// and their classes: the third of the circle their angle lies in.
fn points(n: usize, offset: f32) -> (Vec<f32>, Vec<i32>) {
    let side = (n as f32).sqrt().ceil() as usize;
    let (mut xy, mut labels) = (Vec::new(), Vec::new());
    for i in 0..n {
        let x = ((i % side) as f32 + offset) / side as f32 * 2.0 - 1.0;
        let y = ((i / side) as f32 + offset) / side as f32 * 2.0 - 1.0;
        let turn = (y.atan2(x) / std::f32::consts::TAU).rem_euclid(1.0);
        xy.extend([x, y]);
        labels.push((turn * 3.0) as i32 % 3);
    }
    (xy, labels)
}

fn main() -> Result<(), snn::Error> {
    let (x, labels) = points(400, 0.25);
    let mut model = Model::new("input 2; dense 32 relu; dense 32 relu; dense 3")?;
    model.init(7)?;
    let mut fwd = model.preallocate(400)?; // training mode
    let mut bwd = model.preallocate_grads(400)?;
    let mut adam = model.optimiser(OptimiserKind::Adam)?;
    adam.set(Hyperparameter::LearningRate, 0.01)?;
    fwd.set_inputs(&x)?;
    bwd.set_labels(&labels)?;
    let mut loss = f32::INFINITY;
    for _ in 0..400 {
        fwd.forward(&model)?;
        loss = bwd.backprop(&mut fwd, &model, Loss::LogitCrossEntropy)?;
        adam.step(&mut model, &mut bwd)?;
    }

    let (test_x, test_labels) = points(100, 0.6);
    let prediction = model.predict(&test_x)?; // inference mode, one call
    assert_eq!(prediction.shape, [100, 3]);
    let correct = prediction.classes().iter().zip(&test_labels).filter(|(c, l)| **c as i32 == **l).count();
    println!(
        "snn {}: 3 classes, cross-entropy {loss:.3} after 400 Adam steps, held-out accuracy {correct}/100",
        snn::version_string()
    );
    if correct < 90 {
        eprintln!("the held-out accuracy stayed below 90%");
        std::process::exit(1);
    }
    Ok(())
}
