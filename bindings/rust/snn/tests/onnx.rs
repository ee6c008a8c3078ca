//! ONNX: a model exported and imported again has the same spec, bit-identical
//! parameters and the same outputs; broken bytes give a clear error kind.

use snn::{ErrorKind, Model, OnnxExportOptions, OnnxImportOptions};

const SPEC: &str = "input 6; dense 8 relu; dense 5 tanh; dense 3";

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn outputs(m: &Model, x: &[f32]) -> Vec<f32> {
    let mut fwd = m.preallocate(4).unwrap();
    fwd.set_training(false).unwrap();
    fwd.set_inputs(x).unwrap();
    fwd.forward(m).unwrap();
    fwd.outputs().unwrap().to_vec()
}

#[test]
fn an_exported_model_imports_with_the_same_spec_parameters_and_outputs() {
    let mut model = Model::new(SPEC).unwrap();
    model.init(5).unwrap();
    let bytes = model.export_onnx_bytes(&OnnxExportOptions::default()).unwrap();
    assert!(bytes.len() > 4 * model.parameters().unwrap().len(), "the file holds every parameter");
    let dir = std::env::temp_dir().join(format!("snn-rust-onnx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.onnx");
    model.export_onnx(&path, &OnnxExportOptions::default()).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "the file and the buffer hold the same bytes");
    let from_file = Model::import_onnx(&path, &OnnxImportOptions::default()).unwrap();
    let from_bytes = Model::import_onnx_bytes(&bytes, &OnnxImportOptions::default()).unwrap();
    let x: Vec<f32> = (0..4 * 6).map(|i| ((i * 17 % 23) as f32 / 23.0) - 0.5).collect();
    let expected = outputs(&model, &x);
    for other in [&from_file, &from_bytes] {
        assert_eq!(other.describe().unwrap(), model.describe().unwrap());
        assert_eq!(bits(other.parameters().unwrap()), bits(model.parameters().unwrap()));
        assert_eq!(bits(&outputs(other, &x)), bits(&expected));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn broken_bytes_are_a_file_format_error() {
    let mut model = Model::new(SPEC).unwrap();
    model.init(5).unwrap();
    let bytes = model.export_onnx_bytes(&OnnxExportOptions::default()).unwrap();
    let err = Model::import_onnx_bytes(&bytes[..bytes.len() / 2], &OnnxImportOptions::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::FileFormat, "{err}");
    let err = Model::import_onnx("no-such-file.onnx", &OnnxImportOptions::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
}
