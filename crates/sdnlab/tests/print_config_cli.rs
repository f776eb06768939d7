//! Every benchmark command prints the experiment file its flags describe
//! (`--print-config`), and `sdnlab run` reads that file back as the same
//! experiment: printing it again gives the same text, and a flag given on
//! the command line is in the file. No root needed: nothing runs.

use std::process::Command;

fn sdnlab(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_sdnlab")).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_bench_prints_a_file_that_runs_as_the_same_experiment() {
    let dir = std::env::temp_dir().join(format!("sdnlab-print-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (bench, flags, expect) in [
        ("ctl", vec!["--switches", "3"], "switches = 3"),
        ("switch", vec!["--dut", "veth,bridge", "--no-tcp"], "tcp = false"),
        (
            "dp",
            vec!["--dut", "sdnlab", "--tests", "throughput", "--quick"],
            "tests = [\"throughput\"]",
        ),
        (
            "gen",
            vec!["--generator", "trafgen", "--rounds", "2"],
            "generators = [\"trafgen\"]",
        ),
        ("lb", vec!["--policy", "maglev", "--quick"], "policies = [\"maglev\"]"),
        ("fidelity", vec!["--quick", "--rounds", "2"], "rounds = 2"),
    ] {
        let mut args = vec!["bench", bench];
        args.extend(&flags);
        args.push("--print-config");
        let text = sdnlab(&args);
        assert!(text.contains(&format!("experiment = \"{bench}\"")), "{bench}:\n{text}");
        assert!(text.contains(expect), "{bench}: no {expect}:\n{text}");
        let file = dir.join(format!("{bench}.toml"));
        std::fs::write(&file, &text).unwrap();
        let again = sdnlab(&["run", file.to_str().unwrap(), "--print-config"]);
        assert_eq!(again, text, "{bench}: the file read back is another experiment");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
