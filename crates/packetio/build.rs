//! Compiles the XDP and tc programs (`bpf/*.bpf.c`) to BPF objects with
//! clang, for the loader (libbpf, through libbpf-rs) to take from the
//! binary at run time. BPF objects are the same whatever the target
//! architecture, so cross builds compile them here too. The headers are
//! libbpf's own, as the libbpf-sys build installed them (the same version
//! as the library that loads the objects), and Linux's UAPI headers.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let libbpf_include = std::env::var_os("DEP_BPF_INCLUDE").expect("libbpf-sys gives its headers (DEP_BPF_INCLUDE)");
    let clang = std::env::var_os("CLANG").unwrap_or_else(|| "clang".into());
    println!("cargo:rerun-if-env-changed=CLANG");
    println!("cargo:rerun-if-changed=bpf");
    // asm/types.h and friends: Debian keeps them under the host's triple.
    let host_asm = ["/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu"]
        .into_iter()
        .find(|d| Path::new(d).join("asm").is_dir());
    let mut sources: Vec<PathBuf> = std::fs::read_dir("bpf")
        .expect("the bpf directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".bpf.c"))
        .collect();
    sources.sort();
    // The architecture the programs will be JIT-compiled for (the seqlock
    // read in xsk.bpf.c needs barriers off x86), named as libbpf names it.
    let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok("arm") => "arm",
        Ok("riscv64") => "riscv",
        Ok("powerpc64") => "powerpc",
        Ok("s390x") => "s390",
        _ => "unknown",
    };
    for src in sources {
        let name = src.file_name().unwrap().to_string_lossy().replace(".bpf.c", ".bpf.o");
        let mut cmd = Command::new(&clang);
        cmd.args(["-g", "-O2", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror"])
            .arg("-I")
            .arg(&libbpf_include)
            .arg("-I")
            .arg("bpf")
            .arg(format!("-D__TARGET_ARCH_{arch}"));
        if let Some(d) = host_asm {
            cmd.arg("-idirafter").arg(d);
        }
        cmd.arg("-c").arg(&src).arg("-o").arg(out.join(&name));
        match cmd.status() {
            Ok(s) if s.success() => {}
            Ok(s) => panic!("clang could not compile {} ({s})", src.display()),
            Err(e) => panic!(
                "packetio: clang is needed to compile the XDP programs ({e}): run scripts/install-deps.sh, or apt-get install clang"
            ),
        }
    }
}
