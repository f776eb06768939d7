//! Dumps the message corpus: `corpus` prints `name hex` lines;
//! `corpus --seeds DIR` writes one binary file per message (fuzzer seeds).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let corpus = ofwire::corpus::all();
    match args.as_slice() {
        [flag, dir] if flag == "--seeds" => {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {dir}: {e}"));
            for (name, msg) in &corpus {
                let path = std::path::Path::new(dir).join(name);
                std::fs::write(&path, msg.to_bytes().expect("corpus encodes"))
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            }
            eprintln!("wrote {} seeds to {dir}", corpus.len());
        }
        [] => {
            for (name, msg) in &corpus {
                println!(
                    "{name} {}",
                    ofwire::types::to_hex(&msg.to_bytes().expect("corpus encodes"))
                );
            }
        }
        _ => {
            eprintln!("usage: corpus [--seeds DIR]");
            std::process::exit(2);
        }
    }
}
