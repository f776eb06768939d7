#!/usr/bin/env python3
"""The workspace's shape, as issue 48 counts it: long product files, long
functions and import circles between a crate's modules. Prints each list
and a summary line; `--max-files N --max-fns N` make it a check (exit 1
when a count is above its bound). Product code only: `tests/`, `benches/`,
`examples/`, `fuzz/` and test modules in files of their own (`tests.rs`)
are left out, and a function's length is counted
from its `fn` line to its closing brace, `#[cfg(test)]` modules excluded.
"""
import argparse, os, re, subprocess, sys

FN = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)')


def product_files():
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "crates/*.rs"],
        capture_output=True, text=True, check=True,
    ).stdout
    for path in sorted(set(out.split())):
        if not os.path.exists(path):
            continue
        parts = path.split("/")
        if any(p in ("tests", "benches", "examples", "fuzz") for p in parts[2:]):
            continue
        if parts[-1] == "tests.rs":  # a `#[cfg(test)] mod tests;` in a file of its own
            continue
        yield path


def strip(line):
    """The line without string literals, char literals and comments (rough: enough for brace counting)."""
    line = re.sub(r'//.*', '', line)
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line


def long_fns(path, bound):
    lines = open(path, encoding="utf-8").read().split("\n")
    stack = []  # (name, start line, depth at start)
    depth, found, skip_until = 0, [], None
    raw_string = False
    for i, raw in enumerate(lines):
        if raw_string:
            if '"#' in raw:
                raw_string = False
            continue
        if re.search(r'r#+"', raw) and not re.search(r'r#+".*"#', raw):
            raw_string = True
        if skip_until is None and re.match(r'\s*#\[cfg\(test\)\]', raw):
            skip_until = depth  # the next item at this depth is test code
            continue
        line = strip(raw)
        m = FN.match(line)
        if m and skip_until is None:
            stack.append((m.group(7), i + 1, depth))
        for ch in line:
            if ch == '{':
                depth += 1
            elif ch == '}':
                depth -= 1
                while stack and depth == stack[-1][2] and '{' in "".join(lines[stack[-1][1] - 1:i + 1]):
                    name, start, _ = stack.pop()
                    n = i + 1 - start + 1
                    if n > bound:
                        found.append((n, f"{path}:{start} {name}"))
                if skip_until is not None and depth == skip_until:
                    skip_until = None
        # a declaration without a body (trait method, extern) ends at ';'
        if stack and stack[-1][2] == depth and line.rstrip().endswith(';') and '{' not in "".join(lines[stack[-1][1] - 1:i + 1]):
            stack.pop()
    return found


def circles(crate_dir):
    """Cycles between a crate's top-level modules through `use crate::` / `crate::` paths."""
    src = os.path.join(crate_dir, "src")
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs") or f == "tests.rs":
                continue
            rel = os.path.relpath(os.path.join(root, f), src)
            top = rel.split(os.sep)[0].removesuffix(".rs")
            if top in ("lib", "main"):
                continue
            text = open(os.path.join(root, f), encoding="utf-8").read()
            text = re.split(r"#\[cfg\(test\)\]\s*mod \w+", text)[0]
            text = re.sub(r"//[^\n]*", "", text)  # doc and line comments name modules too
            deps = set(re.findall(r"\bcrate::(\w+)", text))
            for group in re.findall(r"\bcrate::\{([^}]*)\}", text):
                deps.update(re.findall(r"(?:^|,)\s*(\w+)", group))
            mods.setdefault(top, set()).update(d for d in deps if d != top)
    names = set(mods)
    graph = {m: {d for d in ds if d in names} for m, ds in mods.items()}
    # Tarjan's strongly connected components
    index, low, on, st, out, n = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file-lines", type=int, default=1000)
    ap.add_argument("--fn-lines", type=int, default=150)
    ap.add_argument("--max-files", type=int)
    ap.add_argument("--max-fns", type=int)
    ap.add_argument("--max-circles", type=int)
    a = ap.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    files = list(product_files())
    big = sorted(((sum(1 for _ in open(f, encoding="utf-8")), f) for f in files), reverse=True)
    big = [b for b in big if b[0] > a.file_lines]
    fns = sorted((x for f in files for x in long_fns(f, a.fn_lines)), reverse=True)
    circ = []
    for d in sorted(os.listdir("crates")):
        for c in circles(os.path.join("crates", d)):
            circ.append(f"{d}: {' <-> '.join(c)}")
    print(f"product files over {a.file_lines} lines: {len(big)}")
    for n, f in big:
        print(f"  {n:5} {f}")
    print(f"functions over {a.fn_lines} lines: {len(fns)}")
    for n, f in fns:
        print(f"  {n:5} {f}")
    print(f"import circles between a crate's modules: {len(circ)}")
    for c in circ:
        print(f"  {c}")
    bad = []
    if a.max_files is not None and len(big) > a.max_files:
        bad.append(f"{len(big)} files over {a.file_lines} lines (at most {a.max_files})")
    if a.max_fns is not None and len(fns) > a.max_fns:
        bad.append(f"{len(fns)} functions over {a.fn_lines} lines (at most {a.max_fns})")
    if a.max_circles is not None and len(circ) > a.max_circles:
        bad.append(f"{len(circ)} import circles (at most {a.max_circles})")
    if bad:
        print("shape: " + "; ".join(bad) + ": split what grew", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
