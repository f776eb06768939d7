# Sourced by the bench-*.sh scripts, from the repository's root, with the
# bench's name: sdnlab's release build ($bin) and a new directory for the
# results ($out, results/bench-NAME-<UTC time>), both absolute paths.
#   . scripts/lib/bench.sh NAME
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --quiet --release -p sdnlab
bin=$PWD/target/release/sdnlab
out=$PWD/results/bench-$1-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
