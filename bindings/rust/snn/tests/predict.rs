//! Inference caches and the one-call predict: the mode they run in, the
//! outputs and their shapes, and the gathers' common form.

use snn::{ErrorKind, Model, Prediction};

const BN_DROPOUT: &str = "input 4; dense 8; batchnorm; relu; dropout 0.5; dense 3";

fn inputs(batch: usize, features: usize) -> Vec<f32> {
    (0..batch * features).map(|i| ((i * 37 % 23) as f32 / 23.0) - 0.5).collect()
}

fn model(spec: &str) -> Model {
    let mut m = Model::new(spec).unwrap();
    m.init(4).unwrap();
    m
}

#[test]
fn preallocate_starts_in_training_mode_and_preallocate_inference_does_not() {
    let m = model(BN_DROPOUT);
    assert!(m.preallocate(2).unwrap().training().unwrap());
    let fwd = m.preallocate_inference(2).unwrap();
    assert!(!fwd.training().unwrap());
    assert_eq!(fwd.batch().unwrap().1, 2);
}

#[test]
fn an_inference_cache_leaves_the_state_alone_and_drops_nothing() {
    let m = model(BN_DROPOUT);
    let state = m.state().unwrap();
    let mut fwd = m.preallocate_inference(5).unwrap();
    fwd.set_inputs(&inputs(5, 4)).unwrap();
    fwd.forward(&m).unwrap();
    let first = fwd.outputs().unwrap().to_vec();
    fwd.forward(&m).unwrap();
    assert_eq!(fwd.outputs().unwrap(), first.as_slice());
    assert_eq!(m.state().unwrap(), state, "an inference pass moved batchnorm's running statistics");

    // A training cache moves them: the check above can fail.
    let mut train = m.preallocate(5).unwrap();
    train.set_inputs(&inputs(5, 4)).unwrap();
    train.forward(&m).unwrap();
    assert_ne!(m.state().unwrap(), state);
}

#[test]
fn predict_gives_the_inference_outputs_with_their_shape() {
    let m = model(BN_DROPOUT);
    let x = inputs(5, 4);
    let mut fwd = m.preallocate_inference(5).unwrap();
    fwd.set_inputs(&x).unwrap();
    fwd.forward(&m).unwrap();
    let state = m.state().unwrap();
    let p = m.predict(&x).unwrap();
    assert_eq!(p.shape, vec![5, 3]);
    assert_eq!(p.values, fwd.outputs().unwrap());
    assert_eq!(m.state().unwrap(), state);
    // One sample: the first row of the batch's outputs.
    let one = m.predict(&x[..4]).unwrap();
    assert_eq!(one.shape, vec![1, 3]);
    assert_eq!(one.values, p.values[..3]);
}

#[test]
fn predict_shapes_of_sequences_and_images() {
    let seq = model("input seq 5x3; dense 4 tanh; dense 6");
    let p = seq.predict(&inputs(2, 15)).unwrap();
    assert_eq!(p.shape, vec![2, 5, 6]);
    assert_eq!(p.values.len(), 60);
    assert_eq!(p.classes().len(), 10, "one class per step");

    let pooled = model("input seq 5x3; dense 4 tanh; seqpool mean; dense 2");
    assert_eq!(pooled.predict(&inputs(3, 15)).unwrap().shape, vec![3, 2]);

    let conv = model("input 6x6x2; conv 3 4 pad=1 relu");
    let p = conv.predict(&inputs(2, 72)).unwrap();
    assert_eq!(p.shape, vec![2, 4, 6, 6]);
    assert_eq!(p.values.len(), 2 * 144);

    let tokens = model("input tokens 4 vocab=10; embedding 3; seqpool mean; dense 2");
    let p = tokens.predict_tokens(&[1, 2, 3, 4, 9, 8, 7, 6]).unwrap();
    assert_eq!(p.shape, vec![2, 2]);
    assert_eq!(tokens.predict_tokens(&[1, 2, 3, 10]).unwrap_err().kind(), ErrorKind::Token);
}

#[test]
fn predict_refuses_partial_and_empty_batches() {
    let m = model(BN_DROPOUT);
    assert_eq!(m.predict(&[0.0; 7]).unwrap_err().kind(), ErrorKind::Count);
    assert_eq!(m.predict(&[]).unwrap_err().kind(), ErrorKind::Batch);
}

#[test]
fn classes_are_the_largest_output_of_each_row() {
    let p = Prediction { values: vec![0.1, 0.7, 0.2, 3.0, -1.0, 3.0, -2.0, -1.0, -3.0], shape: vec![3, 3] };
    assert_eq!(p.classes(), vec![1, 0, 1]);
}

#[test]
fn every_gather_takes_the_data_and_the_indices() {
    let m = model("input 3; dense 2");
    let data = inputs(4, 3);
    let mut gathered = m.preallocate_inference(2).unwrap();
    gathered.set_inputs_gather(&data, &[3, 1]).unwrap();
    gathered.forward(&m).unwrap();
    let mut picked = data[9..12].to_vec();
    picked.extend_from_slice(&data[3..6]);
    assert_eq!(gathered.outputs().unwrap(), m.predict(&picked).unwrap().values);

    let t = model("input tokens 2 vocab=5; embedding 3; seqpool mean; dense 2");
    let mut fwd = t.preallocate_inference(2).unwrap();
    fwd.set_tokens_gather(&[0, 1, 2, 3, 4, 4], &[2, 0]).unwrap();
    fwd.forward(&t).unwrap();
    assert_eq!(fwd.outputs().unwrap(), t.predict_tokens(&[4, 4, 0, 1]).unwrap().values);
}
