//! Sequence models: lengths, one label per step, token ids and token data sets.

use snn::{BackwardCache, Dataset, Device, ErrorKind, ForwardCache, Loss, Model, SequenceInput};

const SPEC: &str = "input seq 5x3; dense 4 tanh; layernorm; dense 6";
const T: usize = 5;
const F: usize = 3;
const K: usize = 6;
const LENGTHS: [i32; 3] = [5, 2, 4];

/// Three samples of 5 steps of 3 features, `[batch][T][F]`.
fn inputs() -> Vec<f32> {
    (0..3 * T * F).map(|i| ((i * 7 % 11) as f32 / 11.0) - 0.5).collect()
}

/// One label per step, `[batch][T]`: -1 ignores step 1 of sample 0, and
/// the padded steps (at and after each sample's length) hold class 3.
fn labels() -> Vec<i32> {
    let mut labels = Vec::new();
    for (s, &length) in LENGTHS.iter().enumerate() {
        for t in 0..T {
            labels.push(if t >= length as usize { 3 } else { ((s + 2 * t) % K) as i32 });
        }
    }
    labels[1] = -1;
    labels
}

/// Cross-entropy of `[batch][T][K]` logits, the mean over the steps counted:
/// those before each sample's length whose label is not -1.
fn expected_loss(outputs: &[f32], labels: &[i32], lengths: &[i32]) -> f64 {
    let (mut sum, mut counted) = (0f64, 0usize);
    for (s, &length) in lengths.iter().enumerate() {
        for t in 0..length as usize {
            let label = labels[s * T + t];
            if label < 0 {
                continue;
            }
            let row: Vec<f64> = outputs[(s * T + t) * K..][..K].iter().map(|&y| f64::from(y)).collect();
            let top = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let log_sum = row.iter().map(|y| (y - top).exp()).sum::<f64>().ln() + top;
            sum += log_sum - row[label as usize];
            counted += 1;
        }
    }
    sum / counted as f64
}

fn model() -> Model {
    let mut model = Model::new(SPEC).unwrap();
    model.init(11).unwrap();
    model
}

/// One pass over `x` with `lengths` (None: full length) and per-step `labels`:
/// the loss, the gradient and the outputs.
fn run(
    model: &Model,
    fwd: &mut ForwardCache,
    bwd: &mut BackwardCache,
    x: &[f32],
    lengths: Option<&[i32]>,
    labels: &[i32],
) -> (f32, Vec<f32>, Vec<f32>) {
    fwd.set_inputs(x).unwrap();
    if let Some(lengths) = lengths {
        fwd.set_lengths(lengths).unwrap();
    }
    fwd.forward(model).unwrap();
    bwd.set_labels(labels).unwrap();
    let loss = bwd.backprop(fwd, model, Loss::LogitCrossEntropy).unwrap();
    (loss, bwd.gradients().unwrap().to_vec(), fwd.outputs().unwrap().to_vec())
}

#[test]
fn the_input_of_a_sequence_model_reports_its_steps() {
    let model = model();
    assert_eq!(model.input_sequence().unwrap(), SequenceInput { steps: T, vocab: 0 });
    assert_eq!(model.input_size().unwrap(), T * F);
    assert_eq!(model.output_size().unwrap(), T * K);
    assert_eq!(model.layer_shape(3).unwrap(), (K, T, 1));
    let vector = Model::new("input 3; dense 2").unwrap();
    assert_eq!(vector.input_sequence().unwrap(), SequenceInput { steps: 0, vocab: 0 });
}

#[test]
fn the_loss_over_steps_is_the_mean_over_the_steps_counted() {
    let model = model();
    let (mut fwd, mut bwd) = (model.preallocate(3).unwrap(), model.preallocate_grads(3).unwrap());
    let (x, labels) = (inputs(), labels());
    let (loss, gradient, outputs) = run(&model, &mut fwd, &mut bwd, &x, Some(&LENGTHS), &labels);
    assert_eq!(outputs.len(), 3 * T * K);
    let expected = expected_loss(&outputs, &labels, &LENGTHS);
    assert!((f64::from(loss) - expected).abs() <= 1e-5 * expected.abs(), "{loss} vs {expected}");

    // a padded step's label changes nothing, bit for bit
    let mut padded = labels.clone();
    padded[T + 3] = 0;
    let (same_loss, same_gradient, _) = run(&model, &mut fwd, &mut bwd, &x, Some(&LENGTHS), &padded);
    assert_eq!(same_loss.to_bits(), loss.to_bits());
    assert_eq!(same_gradient, gradient);

    // a valid step's label does
    let mut valid = labels.clone();
    valid[T + 1] = (valid[T + 1] + 1) % K as i32;
    let (other_loss, _, _) = run(&model, &mut fwd, &mut bwd, &x, Some(&LENGTHS), &valid);
    assert_ne!(other_loss, loss);

    // without lengths every step counts, the padded ones too
    let (full_loss, _, outputs) = run(&model, &mut fwd, &mut bwd, &x, None, &labels);
    let expected = expected_loss(&outputs, &labels, &[T as i32; 3]);
    assert!((f64::from(full_loss) - expected).abs() <= 1e-5 * expected.abs(), "{full_loss} vs {expected}");
    assert_ne!(full_loss, loss);
}

#[test]
fn gathered_samples_lengths_and_labels_equal_the_direct_ones() {
    let model = model();
    let (mut fwd, mut bwd) = (model.preallocate(3).unwrap(), model.preallocate_grads(3).unwrap());
    let (x, labels) = (inputs(), labels());
    let order = [2usize, 0];
    let pick = |v: &[f32], n: usize| order.iter().flat_map(|&s| v[s * n..][..n].to_vec()).collect::<Vec<f32>>();
    let direct_labels: Vec<i32> = order.iter().flat_map(|&s| labels[s * T..][..T].to_vec()).collect();
    let direct_lengths: Vec<i32> = order.iter().map(|&s| LENGTHS[s]).collect();
    let direct = run(&model, &mut fwd, &mut bwd, &pick(&x, T * F), Some(&direct_lengths), &direct_labels);

    let indices: Vec<i64> = order.iter().map(|&s| s as i64).collect();
    fwd.set_inputs_gather(&x, &indices).unwrap();
    fwd.set_lengths_gather(&LENGTHS, &indices).unwrap();
    fwd.forward(&model).unwrap();
    bwd.set_labels_gather(&labels, &indices).unwrap();
    let loss = bwd.backprop(&mut fwd, &model, Loss::LogitCrossEntropy).unwrap();
    assert_eq!(loss.to_bits(), direct.0.to_bits());
    assert_eq!(bwd.gradients().unwrap(), &direct.1[..]);
    assert_eq!(fwd.outputs().unwrap(), &direct.2[..]);

    let e = bwd.set_labels_gather(&labels[..T + 1], &indices).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Count);
    let e = fwd.set_lengths_gather(&LENGTHS, &[0, 3]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn lengths_out_of_range_and_misplaced_are_refused() {
    let model = model();
    let mut fwd = model.preallocate(3).unwrap();
    let e = fwd.set_lengths(&LENGTHS).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State, "{e}");
    fwd.set_inputs(&inputs()).unwrap();
    for bad in [[0, 2, 4], [5, 6, 4], [5, -1, 4]] {
        let e = fwd.set_lengths(&bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}");
        assert!(e.message().contains("[1, 5]"), "{e}");
    }
    assert_eq!(fwd.set_lengths(&LENGTHS[..2]).unwrap_err().kind(), ErrorKind::Count);
    fwd.set_lengths(&LENGTHS).unwrap();

    let vector = Model::new("input 3; dense 2").unwrap();
    let mut fwd = vector.preallocate(1).unwrap();
    fwd.set_inputs(&[1.0, 2.0, 3.0]).unwrap();
    assert_eq!(fwd.set_lengths(&[1]).unwrap_err().kind(), ErrorKind::Unsupported);

    // a strided convolution changes the number of steps: no lengths
    let strided = Model::new("input seq 6x2; conv1d 3 4 stride=2").unwrap();
    assert_eq!(strided.layer_shape(1).unwrap(), (4, 2, 1));
    let mut fwd = strided.preallocate(1).unwrap();
    fwd.set_inputs(&[0.5; 12]).unwrap();
    let e = fwd.set_lengths(&[3]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
}

#[test]
fn step_labels_are_checked() {
    let model = model();
    let mut bwd = model.preallocate_grads(3).unwrap();
    let labels = labels();
    assert_eq!(bwd.set_labels(&labels[..14]).unwrap_err().kind(), ErrorKind::Count);
    for bad in [K as i32, -2] {
        let mut wrong = labels.clone();
        wrong[7] = bad;
        let e = bwd.set_labels(&wrong).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Label);
        assert!(e.message().contains("sample 1, step 2"), "{e}");
    }
    bwd.set_labels(&labels).unwrap();
}

#[test]
fn token_ids_are_refused_by_a_model_of_floats_and_checked_in_data_sets() {
    let model = model();
    let mut fwd = model.preallocate(2).unwrap();
    let e = fwd.set_tokens(&[1, 2, 3, 4, 0, 1, 2, 3, 4, 0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert_eq!(fwd.set_tokens_gather(&[1, 2, 3, 4, 0], &[0]).unwrap_err().kind(), ErrorKind::Unsupported);

    let e = Dataset::tokens(Device::Cpu, &[1, 2, -3, 4, 0], T, None, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Token, "{e}");
    let e = Dataset::tokens(Device::Cpu, &[1, 2, 3, 4, 0], T, Some(&[6]), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let e = Dataset::tokens(Device::Cpu, &[1, 2, 3, 4, 0], T, None, Some(&[0, 1])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Count, "{e}");
    let e = Dataset::tokens(Device::Cpu, &[1, 2, 3, 4, 0], T, None, Some(&[0, -2, 1, 1, 1])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let ids = Dataset::tokens(Device::Cpu, &[1, 2, 3, 4, 0], T, Some(&[3]), Some(&[0, -1, 1, 1, 1])).unwrap();
    let e = fwd.set_inputs_from_dataset(&ids, &[0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
}

const TOKEN_SPEC: &str = "input tokens 4 vocab=10; embedding 8; dense 3";

#[test]
fn token_ids_outside_the_vocabulary_are_refused() {
    let model = Model::new(TOKEN_SPEC).unwrap();
    assert_eq!(model.input_sequence().unwrap(), SequenceInput { steps: 4, vocab: 10 });
    let mut fwd = model.preallocate(2).unwrap();
    for (bad, at) in [(10, "sample 1, step 3"), (-1, "sample 1, step 3")] {
        let e = fwd.set_tokens(&[0, 1, 2, 3, 4, 5, 6, bad]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Token, "{e}");
        assert!(e.message().contains(at) && e.message().contains(&bad.to_string()), "{e}");
    }
    let e = fwd.set_tokens_gather(&[0, 1, 2, 3, 9, 9, 12, 9], &[0, 1]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Token, "{e}");
    assert_eq!(fwd.set_tokens(&[0, 1, 2]).unwrap_err().kind(), ErrorKind::Count);
    assert_eq!(fwd.set_inputs(&[0.0; 8]).unwrap_err().kind(), ErrorKind::Unsupported);
    let wide = Dataset::tokens(Device::Cpu, &[0, 1, 2, 10], 4, None, None).unwrap();
    let e = fwd.set_inputs_from_dataset(&wide, &[0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Token, "{e}");

    // lengths in a data set need every sequence layer to keep the steps
    let strided = Model::new("input tokens 4 vocab=10; embedding 3; conv1d 2 2 stride=2").unwrap();
    let mut fwd = strided.preallocate(1).unwrap();
    let with_lengths = Dataset::tokens(Device::Cpu, &[0, 1, 2, 3], 4, Some(&[2]), None).unwrap();
    let e = fwd.set_inputs_from_dataset(&with_lengths, &[0]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    let full = Dataset::tokens(Device::Cpu, &[0, 1, 2, 3], 4, None, None).unwrap();
    fwd.set_inputs_from_dataset(&full, &[0]).unwrap();
}

#[test]
fn a_token_data_set_gathers_ids_lengths_and_step_labels() {
    let mut model = Model::new(TOKEN_SPEC).unwrap();
    model.init(3).unwrap();
    let tokens = [1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 9, 0];
    let lengths = [4, 2, 3];
    let labels = [0, 1, 2, 0, 2, -1, 1, 1, 1, 0, 2, 2];
    let data = Dataset::tokens(Device::Cpu, &tokens, 4, Some(&lengths), Some(&labels)).unwrap();
    let (mut fwd, mut bwd) = (model.preallocate(3).unwrap(), model.preallocate_grads(3).unwrap());
    let indices = [2i64, 1];
    fwd.set_inputs_from_dataset(&data, &indices).unwrap();
    fwd.forward(&model).unwrap();
    bwd.set_labels_from_dataset(&data, &indices).unwrap();
    let from_data = bwd.backprop(&mut fwd, &model, Loss::LogitCrossEntropy).unwrap();
    let gradient = bwd.gradients().unwrap().to_vec();

    fwd.set_tokens_gather(&tokens, &indices).unwrap();
    fwd.set_lengths_gather(&lengths, &indices).unwrap();
    fwd.forward(&model).unwrap();
    bwd.set_labels_gather(&labels, &indices).unwrap();
    let gathered = bwd.backprop(&mut fwd, &model, Loss::LogitCrossEntropy).unwrap();
    assert_eq!(gathered.to_bits(), from_data.to_bits());
    assert_eq!(bwd.gradients().unwrap(), &gradient[..]);

    // sample 2 then 1 directly: 3 + 1 steps counted (sample 1's step 1 is -1)
    fwd.set_tokens(&[9, 0, 9, 0, 5, 6, 7, 8]).unwrap();
    fwd.set_lengths(&[3, 2]).unwrap();
    fwd.forward(&model).unwrap();
    bwd.set_labels(&[1, 0, 2, 2, 2, -1, 1, 1]).unwrap();
    let direct = bwd.backprop(&mut fwd, &model, Loss::LogitCrossEntropy).unwrap();
    assert_eq!(direct.to_bits(), from_data.to_bits());
    let outputs = fwd.outputs().unwrap();
    let (mut sum, mut n) = (0f64, 0);
    for (s, t, label) in [(0, 0, 1), (0, 1, 0), (0, 2, 2), (1, 0, 2)] {
        let row: Vec<f64> = outputs[(s * 4 + t) * 3..][..3].iter().map(|&y| f64::from(y)).collect();
        sum += row.iter().map(|y| y.exp()).sum::<f64>().ln() - row[label];
        n += 1;
    }
    let expected = sum / f64::from(n);
    assert!((f64::from(direct) - expected).abs() <= 1e-5 * expected.abs(), "{direct} vs {expected}");
}
