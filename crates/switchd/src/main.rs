//! `sdnlab-switch`: the switch alone, for machines that run nothing else of
//! sdnlab (routers: `packaging/openwrt/`). The same command line as
//! `sdnlab switch`.

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "sdnlab-switch",
    version,
    about = "sdnlab's userspace OpenFlow 1.0/1.3 switch"
)]
struct Cli {
    #[command(flatten)]
    args: switchd::SwitchArgs,
}

fn main() -> std::process::ExitCode {
    switchd::run(Cli::parse().args)
}
