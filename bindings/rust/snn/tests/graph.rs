//! The graph engine from Rust: a residual block with batchnorm and dropout,
//! training and inference modes, the dropout seed, and the model's state.

use snn::{ErrorKind, Loss, Model, OptimiserKind};

/// conv -> [conv, batchnorm, relu, conv, batchnorm] + skip -> relu -> pool -> dropout -> dense
const RESIDUAL: &str = "input 6x6x2; conv 3 4 pad=1 relu name=a; conv 3 4 pad=1 nobias; batchnorm; relu; \
                        conv 3 4 pad=1 nobias; batchnorm; add a; relu; globalavgpool; flatten; dropout 0.5; dense 3";

fn images(batch: usize) -> Vec<f32> {
    (0..batch * 72).map(|i| ((i * 41 % 97) as f32 / 97.0) - 0.5).collect()
}

fn model() -> Model {
    let mut m = Model::new(RESIDUAL).unwrap();
    m.init(9).unwrap();
    m
}

fn run(model: &Model, training: bool, seed: u64) -> Vec<f32> {
    let mut fwd = model.preallocate(4).unwrap();
    fwd.set_training(training).unwrap();
    fwd.set_seed(seed).unwrap();
    fwd.set_inputs(&images(4)).unwrap();
    fwd.forward(model).unwrap();
    fwd.outputs().unwrap().to_vec()
}

#[test]
fn the_residual_block_has_the_shapes_and_state_of_its_spec() {
    let m = model();
    assert_eq!(m.layer_count().unwrap(), 13);
    assert_eq!(m.layer_shape(7).unwrap(), (4, 6, 6)); // add a
    assert_eq!(m.layer_shape(9).unwrap(), (4, 1, 1)); // globalavgpool
    assert_eq!(m.output_size().unwrap(), 3);
    // two batchnorms of 4 channels: mean[4], var[4], num_batches_tracked[1] each
    assert_eq!(m.state_count().unwrap(), 18);
    assert_eq!(m.layer_state(3).unwrap(), 0..9);
    assert_eq!(m.layer_state(6).unwrap(), 9..18);
    assert!(m.layer_state(7).unwrap().is_empty());
    let bn = m.layer_params(3).unwrap();
    assert_eq!((bn.weight.len(), bn.bias.len()), (4, 4));
    assert_eq!(&m.parameters().unwrap()[bn.weight], &[1.0; 4]);
    let state = m.state().unwrap();
    assert_eq!(&state[0..9], &[0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]);
}

#[test]
fn a_cache_starts_in_training_mode_and_switches() {
    let m = model();
    let mut fwd = m.preallocate(1).unwrap();
    assert!(fwd.training().unwrap());
    fwd.set_training(false).unwrap();
    assert!(!fwd.training().unwrap());
}

#[test]
fn training_and_inference_modes_give_different_outputs() {
    let m = model();
    let train = run(&m, true, 0);
    let infer = run(&m, false, 0);
    assert_eq!(train.len(), 12);
    assert_ne!(train, infer);
}

#[test]
fn inference_is_deterministic_and_leaves_the_state_alone() {
    let m = model();
    let before = m.state().unwrap();
    let a = run(&m, false, 1);
    let b = run(&m, false, 2);
    assert_eq!(a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), b.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    let mut fwd = m.preallocate(4).unwrap();
    fwd.set_training(false).unwrap();
    fwd.set_inputs(&images(4)).unwrap();
    fwd.forward(&m).unwrap();
    let first = fwd.outputs().unwrap().to_vec();
    fwd.forward(&m).unwrap();
    assert_eq!(fwd.outputs().unwrap(), &first[..]);
    assert_eq!(m.state().unwrap(), before);
}

#[test]
fn dropout_masks_follow_the_seed() {
    let m = model();
    assert_eq!(run(&m, true, 42), run(&m, true, 42));
    assert_ne!(run(&m, true, 42), run(&m, true, 43));
    let mut fwd = m.preallocate(4).unwrap();
    fwd.set_seed(7).unwrap();
    fwd.set_inputs(&images(4)).unwrap();
    fwd.forward(&m).unwrap();
    let first = fwd.outputs().unwrap().to_vec();
    fwd.forward(&m).unwrap();
    assert_ne!(fwd.outputs().unwrap(), &first[..], "a second pass draws new masks");
    fwd.set_seed(7).unwrap();
    fwd.forward(&m).unwrap();
    assert_eq!(fwd.outputs().unwrap(), &first[..], "set_seed restarts the sequence");
}

#[test]
fn training_passes_update_the_state_which_reads_and_writes_back() {
    let mut m = model();
    run(&m, true, 0);
    run(&m, true, 0);
    let state = m.state().unwrap();
    assert_eq!(state[8], 2.0, "num_batches_tracked of the first batchnorm");
    assert_eq!(state[17], 2.0);
    assert!(state[0..4].iter().any(|&mean| mean != 0.0), "{state:?}");
    let infer_trained = run(&m, false, 0);

    let mut reset = state.clone();
    reset[0..4].fill(0.0);
    reset[4..8].fill(1.0);
    m.set_state(&reset).unwrap();
    assert_eq!(m.state().unwrap(), reset);
    assert_ne!(run(&m, false, 0), infer_trained, "inference reads the running statistics");
    m.set_state(&state).unwrap();
    assert_eq!(run(&m, false, 0), infer_trained);

    let mut copy = vec![0f32; 18];
    m.get_state(&mut copy).unwrap();
    assert_eq!(copy, state);
    assert_eq!(m.set_state(&state[..17]).unwrap_err().kind(), ErrorKind::Count);
    assert_eq!(m.get_state(&mut copy[..3]).unwrap_err().kind(), ErrorKind::Count);
}

#[test]
fn the_residual_network_trains_while_an_inference_cache_evaluates_it() {
    let mut m = model();
    let mut fwd = m.preallocate(4).unwrap();
    let mut bwd = m.preallocate_grads(4).unwrap();
    let mut eval = m.preallocate(4).unwrap();
    let mut eval_bwd = m.preallocate_grads(4).unwrap();
    let mut adam = m.optimiser(OptimiserKind::Adam).unwrap();
    adam.set(snn::Hyperparameter::LearningRate, 0.01).unwrap();
    let labels = [0, 1, 2, 0];
    fwd.set_inputs(&images(4)).unwrap();
    bwd.set_labels(&labels).unwrap();
    eval.set_training(false).unwrap();
    eval.set_inputs(&images(4)).unwrap();
    eval_bwd.set_labels(&labels).unwrap();
    let mut evaluate = |m: &Model| {
        eval.forward(m).unwrap();
        eval_bwd.backprop(&mut eval, m, Loss::LogitCrossEntropy).unwrap()
    };
    let before = evaluate(&m);
    for _ in 0..150 {
        fwd.forward(&m).unwrap();
        bwd.backprop(&mut fwd, &m, Loss::LogitCrossEntropy).unwrap();
        adam.step(&mut m, &mut bwd).unwrap();
    }
    let after = evaluate(&m);
    assert!(after < 0.5 * before, "inference-mode loss {before} -> {after}");
}

#[test]
fn concat_and_layernorm_build_a_branching_model() {
    let m = Model::new("input 4; dense 3 name=a; layernorm; dense 5 gelu; concat a; dense 2").unwrap();
    assert_eq!(m.layer_shape(4).unwrap(), (8, 1, 1));
    assert_eq!(m.output_size().unwrap(), 2);
    assert_eq!(m.state_count().unwrap(), 0);
    let mut fwd = m.preallocate(2).unwrap();
    fwd.set_inputs(&[1.0, 2.0, 3.0, 4.0, -1.0, 0.0, 1.0, 0.5]).unwrap();
    fwd.forward(&m).unwrap();
    assert!(fwd.outputs().unwrap().iter().all(|y| y.is_finite()));
    let e = Model::new("input 4; dense 3; add nowhere").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Spec, "{e}");
}

#[test]
fn inference_rewrites_fold_batchnorm_within_rounding_and_refuse_backprop() {
    let mut m = model();
    let mut state = m.state().unwrap();
    for (i, v) in state.iter_mut().enumerate() {
        if i % 9 < 4 {
            *v = 0.3 * (i % 5) as f32 - 0.6; // running means
        } else if i % 9 < 8 {
            *v = 0.5 + 0.25 * (i % 3) as f32; // running variances
        }
    }
    m.set_state(&state).unwrap();
    let x = images(4);
    let mut plain = m.preallocate_inference(4).unwrap();
    let mut folded = m.preallocate_inference(4).unwrap();
    assert!(!folded.inference_rewrites().unwrap());
    folded.set_inference_rewrites(true).unwrap();
    assert!(folded.inference_rewrites().unwrap());
    plain.set_inputs(&x).unwrap();
    plain.forward(&m).unwrap();
    folded.set_inputs(&x).unwrap();
    folded.forward(&m).unwrap();
    let (a, b) = (plain.outputs().unwrap().to_vec(), folded.outputs().unwrap().to_vec());
    let scale = a.iter().fold(0.0f32, |s, v| s.max(v.abs()));
    for (p, f) in a.iter().zip(&b) {
        assert!((p - f).abs() <= 1e-5 * scale + 1e-6, "plain {p}, folded {f}");
    }
    let mut bwd = m.preallocate_grads(4).unwrap();
    bwd.set_labels(&[0, 1, 2, 0]).unwrap();
    let e = bwd.backprop(&mut folded, &m, Loss::LogitCrossEntropy).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State);
    assert!(e.message().contains("inference rewrites"), "{}", e.message());
    folded.set_inference_rewrites(false).unwrap();
    folded.forward(&m).unwrap();
    bwd.backprop(&mut folded, &m, Loss::LogitCrossEntropy).unwrap();
}
