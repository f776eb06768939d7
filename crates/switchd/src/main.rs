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
    #[command(flatten)]
    log: logging::LogArgs,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if let Err(e) = logging::init(&cli.log) {
        eprintln!("sdnlab-switch: {e}");
        return std::process::ExitCode::from(2);
    }
    switchd::run(cli.args)
}
