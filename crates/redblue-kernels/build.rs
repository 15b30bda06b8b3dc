//! Links the system's libopenblas when the `openblas-system` feature asks for it.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_OPENBLAS_SYSTEM").is_some() {
        println!("cargo:rustc-link-lib=dylib=openblas");
    }
}
