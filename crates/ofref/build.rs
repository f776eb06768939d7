//! Compiles the reference pair (csrc/ofref.c) with the system's C compiler.

fn main() {
    println!("cargo:rerun-if-changed=csrc/ofref.c");
    println!("cargo:rerun-if-changed=csrc/ofref.h");
    cc::Build::new()
        .file("csrc/ofref.c")
        .opt_level(2)
        .flag_if_supported("-Wall")
        .flag_if_supported("-Wextra")
        .compile("ofref");
    println!("cargo:rustc-link-lib=pthread");
}
