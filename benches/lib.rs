//! criterion benchmarks of redblue live in this package's `[[bench]]` targets; run them with
//! `cargo bench -p redblue-benches`.
