#!/usr/bin/env bash
# The library crates' hygiene, as CI checks it (scripts/test.sh, lint):
# - no `eprintln!` in a library (logs go through `tracing`; the `sdnlab`
#   command line crate and the binaries' main.rs print what they must);
# - no more `Result<_, String>` in a crate than scripts/string-errors.txt
#   records (a ratchet: the count only goes down; lower the number there
#   when you type some of them), and each one left commented with why;
# - no more long files, long functions or import circles than recorded
#   below (scripts/shape.py).
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
# Each one left says why it is text, on its line or in the few above it
# ("text on purpose: ..."), so the next reader need not guess.
unsaid=$(python3 - <<'PY'
import glob, re
for f in sorted(glob.glob("crates/*/src/**/*.rs", recursive=True)):
    if f.startswith("crates/sdnlab/"):
        continue
    lines = open(f, encoding="utf-8").read().split("\n")
    for i, l in enumerate(lines):
        if re.search(r"Result<.*, *String>", l) and not any(
            "text on purpose" in x.lower() for x in lines[max(0, i - 10) : i + 1]
        ):
            print(f"{f}:{i + 1}: {l.strip()}")
PY
)
if [ -n "$unsaid" ]; then
  echo "$unsaid" >&2
  echo "check-libs: a Result<_, String> (above) without a comment saying why it is text (\"Text on purpose: ...\" on its line or just above): type it, or say why" >&2
  bad=1
fi
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
# The workspace's shape (issue 48): long product files, long functions and
# import circles between a crate's modules, as scripts/shape.py counts
# them. A ratchet too: lower these bounds as files and functions are split.
if ! python3 scripts/shape.py --max-files 1 --max-fns 0 --max-circles 0 > /dev/null; then
  bad=1
fi
exit $bad
