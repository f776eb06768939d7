//! Prints the message corpus, one `name hex` line per message.
fn main() {
    for (name, msg) in ofwire::corpus::all() {
        println!("{name} {}", ofwire::types::to_hex(&msg.to_bytes().expect("corpus encodes")));
    }
}
