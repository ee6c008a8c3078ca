//! `use snn::*;` brings no `Result` alias: the standard `Result<T, E>` keeps
//! its two parameters (this file does not compile otherwise).

use snn::*;

fn parse(text: &str) -> Result<u32, String> {
    text.parse().map_err(|e| format!("{text}: {e}"))
}

fn outputs(spec: &str) -> Result<usize, Error> {
    Model::new(spec)?.output_size()
}

#[test]
fn a_glob_import_leaves_the_standard_result_alone() {
    assert_eq!(parse("42"), Ok(42));
    assert!(parse("x").is_err());
    assert_eq!(outputs("input 3; dense 5").unwrap(), 5);
    let e: std::result::Result<usize, Error> = outputs("input 3; dense");
    assert_eq!(e.unwrap_err().kind(), ErrorKind::Spec);
}
