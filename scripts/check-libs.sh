#!/usr/bin/env bash
# The library crates' hygiene, as CI checks it (scripts/test.sh, lint):
# - no `eprintln!` in a library (logs go through `tracing`; the `sdnlab`
#   command line crate and the binaries' main.rs print what they must);
# - no more `Result<_, String>` in a crate than scripts/string-errors.txt
#   records (a ratchet: the count only goes down; lower the number there
#   when you type some of them).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
prints=$(grep -rn --include=*.rs 'eprintln!' crates/*/src | grep -v -e '^crates/sdnlab/' -e '/src/main.rs:' || true)
if [ -n "$prints" ]; then
  echo "$prints" >&2
  echo "check-libs: eprintln! in a library crate (above): log with tracing::{error,warn,info,debug}! instead" >&2
  bad=1
fi
while read -r crate most; do
  [ -z "$crate" ] || [ "${crate#\#}" != "$crate" ] && continue
  now=$({ grep -rn --include=*.rs -E 'Result<.*, *String>' "crates/$crate/src" || true; } | wc -l)
  if [ "$now" -gt "$most" ]; then
    echo "check-libs: crates/$crate has $now Result<_, String>, more than the $most recorded in scripts/string-errors.txt: return a typed error (thiserror) instead" >&2
    bad=1
  fi
done < scripts/string-errors.txt
for d in crates/*/; do
  c=$(basename "$d")
  [ "$c" = sdnlab ] && continue
  if ! grep -q "^$c " scripts/string-errors.txt; then
    now=$({ grep -rn --include=*.rs -E 'Result<.*, *String>' "crates/$c/src" || true; } | wc -l)
    if [ "$now" -gt 0 ]; then
      echo "check-libs: crates/$c has $now Result<_, String> and none may: return a typed error (thiserror) instead" >&2
      bad=1
    fi
  fi
done
exit $bad
