//! Model files and checkpoints: a saved model loads bit-identically, and
//! training resumed from a checkpoint continues bit-identically.

use std::path::PathBuf;

use snn::{ErrorKind, Hyperparameter, Loss, Model, OptimiserKind, RngState};

const SPEC: &str = "input 6; dense 8 relu name=h; batchnorm; dense 8 tanh; add h; dense 3";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snn-rust-files-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn data() -> (Vec<f32>, Vec<i32>) {
    let x = (0..8 * 6).map(|i| ((i * 29 % 53) as f32 / 53.0) - 0.5).collect();
    (x, vec![0, 1, 2, 0, 1, 2, 2, 1])
}

/// `steps` Adam steps on the fixed batch.
fn train(model: &mut Model, adam: &mut snn::Optimiser, steps: usize) {
    let (x, labels) = data();
    let mut fwd = model.preallocate(8).unwrap();
    let mut bwd = model.preallocate_grads(8).unwrap();
    fwd.set_inputs(&x).unwrap();
    bwd.set_labels(&labels).unwrap();
    for _ in 0..steps {
        fwd.forward(model).unwrap();
        bwd.backprop(&mut fwd, model, Loss::LogitCrossEntropy).unwrap();
        adam.step(model, &mut bwd).unwrap();
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn a_saved_model_loads_with_the_same_parameters_state_and_outputs() {
    let dir = scratch("save");
    let mut model = Model::new(SPEC).unwrap();
    model.init(11).unwrap();
    let mut adam = model.optimiser(OptimiserKind::Adam).unwrap();
    train(&mut model, &mut adam, 5);
    let path = dir.join("model.safetensors");
    model.save(&path).unwrap();
    let loaded = Model::load(&path).unwrap();
    let from_bytes = Model::from_bytes(&model.to_bytes().unwrap()).unwrap();
    for other in [&loaded, &from_bytes] {
        assert_eq!(other.describe().unwrap(), model.describe().unwrap());
        assert_eq!(bits(other.parameters().unwrap()), bits(model.parameters().unwrap()));
        assert_eq!(bits(&other.state().unwrap()), bits(&model.state().unwrap()));
    }
    let (x, _) = data();
    let run = |m: &Model| {
        let mut fwd = m.preallocate(8).unwrap();
        fwd.set_training(false).unwrap();
        fwd.set_inputs(&x).unwrap();
        fwd.forward(m).unwrap();
        bits(fwd.outputs().unwrap())
    };
    assert_eq!(run(&loaded), run(&model));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn training_resumed_from_a_checkpoint_is_bit_identical() {
    let dir = scratch("checkpoint");
    let path = dir.join("ckpt.safetensors");
    let mut model = Model::new(SPEC).unwrap();
    model.init(5).unwrap();
    let mut adam = model.optimiser(OptimiserKind::AdamW).unwrap();
    adam.set(Hyperparameter::LearningRate, 0.003).unwrap();
    train(&mut model, &mut adam, 7);
    model.save_checkpoint(&adam, &path).unwrap();
    train(&mut model, &mut adam, 6);

    let (mut resumed, mut adam2) = Model::load_checkpoint(&path).unwrap();
    assert_eq!(adam2.step_count().unwrap(), 7);
    assert_eq!(adam2.get(Hyperparameter::LearningRate).unwrap(), 0.003);
    train(&mut resumed, &mut adam2, 6);
    assert_eq!(adam2.step_count().unwrap(), 13);
    assert_eq!(bits(resumed.parameters().unwrap()), bits(model.parameters().unwrap()));
    assert_eq!(bits(&resumed.state().unwrap()), bits(&model.state().unwrap()));
    std::fs::remove_dir_all(&dir).unwrap();
}

const DROPOUT: &str = "input 6; dense 16 relu; dropout 0.5; dense 8 tanh; dropout 0.3; dense 3";

/// `steps` Adam steps with a cache whose dropout generator is at `rng`; the
/// generator's state after them.
fn train_dropout(model: &mut Model, adam: &mut snn::Optimiser, rng: RngState, steps: usize) -> RngState {
    let (x, labels) = data();
    let mut fwd = model.preallocate(8).unwrap();
    let mut bwd = model.preallocate_grads(8).unwrap();
    fwd.set_rng_state(rng).unwrap();
    bwd.set_labels(&labels).unwrap();
    for _ in 0..steps {
        fwd.set_inputs(&x).unwrap();
        fwd.forward(model).unwrap();
        bwd.backprop(&mut fwd, model, Loss::LogitCrossEntropy).unwrap();
        adam.step(model, &mut bwd).unwrap();
    }
    fwd.rng_state().unwrap()
}

#[test]
fn a_dropout_model_resumed_with_its_rng_state_is_bit_identical() {
    let dir = scratch("rng");
    let path = dir.join("ckpt.safetensors");
    let mut model = Model::new(DROPOUT).unwrap();
    model.init(8).unwrap();
    let mut adam = model.optimiser(OptimiserKind::Adam).unwrap();
    let saved = train_dropout(&mut model, &mut adam, RngState { seed: 77, passes: 0 }, 5);
    assert_eq!(saved, RngState { seed: 77, passes: 5 });
    model.save_checkpoint(&adam, &path).unwrap();
    let end = train_dropout(&mut model, &mut adam, saved, 6);
    assert_eq!(end, RngState { seed: 77, passes: 11 });

    let (mut resumed, mut adam2) = Model::load_checkpoint(&path).unwrap();
    assert_eq!(train_dropout(&mut resumed, &mut adam2, saved, 6), end);
    assert_eq!(bits(resumed.parameters().unwrap()), bits(model.parameters().unwrap()));

    // without the generator's state, the masks and so the parameters differ
    let (mut reseeded, mut adam3) = Model::load_checkpoint(&path).unwrap();
    train_dropout(&mut reseeded, &mut adam3, RngState { seed: 77, passes: 0 }, 6);
    assert_ne!(bits(reseeded.parameters().unwrap()), bits(model.parameters().unwrap()));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_rng_state_counts_training_passes_only() {
    let model = Model::new(DROPOUT).unwrap();
    let mut fwd = model.preallocate(1).unwrap();
    assert_eq!(fwd.rng_state().unwrap(), RngState { seed: 0, passes: 0 });
    fwd.set_seed(3).unwrap();
    fwd.set_inputs(&[1.0; 6]).unwrap();
    fwd.forward(&model).unwrap();
    fwd.forward(&model).unwrap();
    fwd.set_training(false).unwrap();
    fwd.forward(&model).unwrap();
    assert_eq!(fwd.rng_state().unwrap(), RngState { seed: 3, passes: 2 });
    fwd.set_rng_state(RngState { seed: u64::MAX, passes: u64::MAX }).unwrap();
    assert_eq!(fwd.rng_state().unwrap(), RngState { seed: u64::MAX, passes: u64::MAX });
    fwd.set_rng_state(RngState { seed: 5, passes: 9 }).unwrap();
    fwd.set_seed(5).unwrap();
    assert_eq!(fwd.rng_state().unwrap(), RngState { seed: 5, passes: 0 });
}

#[test]
fn bad_files_are_errors() {
    let e = Model::load("/nonexistent/dir/model.safetensors").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    let mut bytes = Model::new("input 2; dense 1").unwrap().to_bytes().unwrap();
    bytes.truncate(bytes.len() - 1);
    assert_eq!(Model::from_bytes(&bytes).unwrap_err().kind(), ErrorKind::FileFormat);
    assert_eq!(Model::from_bytes(&[]).unwrap_err().kind(), ErrorKind::FileFormat);
    let e = Model::load_checkpoint("/nonexistent/ckpt").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
}
