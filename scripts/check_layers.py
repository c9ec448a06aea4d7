#!/usr/bin/env python3
"""Checks that src/ keeps its layers: a file imports only from the layers
above its own (STYLE.md 6.6).

Usage: scripts/check_layers.py [SRC_DIR]   (default: src next to this script)

Reads every `crate::` path in code (`use` lines, paths in expressions,
`$crate::` in macros, `crate::{a, b}` groups, and `super::` paths that
climb to the crate root; comments are skipped), maps
the file and the path to layers, and fails if a file reaches a layer below
its own. Paths through the crate root's re-exports (`crate::Dialect`) count
as the layer they re-export. The unit tests at a file's foot
(`#[cfg(test)] mod tests`) are not checked: they may build their inputs
with any stage. Exit status: 0 if the layers hold, 1 if not (each breach
printed as `file:line`), 2 for a file or module no layer names.
"""

import os
import re
import sys

# The order, top (imported by all) to bottom. A module is a top-level file
# or folder of src/; the leaves import nothing of the crate.
LAYERS = [
    ("leaves", ["capacity", "testing"]),
    ("protocol", ["protocol"]),
    ("view", ["view"]),
    ("store", ["store"]),
    ("input", ["input"]),
    ("check", ["check"]),
    ("pipeline", ["pipeline"]),
    # The rewriter is output (src/output/rewrite/; a top-level `rewrite`
    # module, as it once was, would count as output too).
    ("output", ["output", "rewrite"]),
    # The generator for fuzzers writes streams; it may use every stage.
    ("generator", ["generator"]),
]
RANK = {m: i for i, (_, mods) in enumerate(LAYERS) for m in mods}
NAME = [name for name, _ in LAYERS]
# The crate root only declares the modules and re-exports them.
EXEMPT = {"lib.rs"}


def strip_comments(text):
    """The text with comments blanked (line numbers kept), strings kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def without_foot_tests(text):
    """The text up to the unit-test module at its foot."""
    m = re.search(r"^#\[cfg\(test\)\]\s*\nmod tests \{", text, re.M)
    return text if m is None else text[: m.start()]


def group_items(text, start):
    """The first identifier of each item of the `{…}` group at `start`."""
    depth, i, item_start, items = 0, start, start + 1, []
    while i < len(text):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                items.append(text[item_start:i])
                break
        elif c == "," and depth == 1:
            items.append(text[item_start:i])
            item_start = i + 1
        i += 1
    firsts = []
    for item in items:
        m = re.match(r"\s*(\w+)", item)
        if m:
            firsts.append(m.group(1))
    return firsts


def crate_paths(text, depth):
    """(line, first segment) of every `crate::` path in `text`, and of every
    `super::` path that climbs to the crate root from a file `depth` modules
    deep."""
    for m in re.finditer(r"(?<![\w:])(\$?crate::|(?:super::)+)", text):
        if m.group(1).startswith("super") and m.group(1).count("super") < depth:
            continue
        line = text.count("\n", 0, m.start()) + 1
        rest = m.end()
        if text.startswith("{", rest):
            for first in group_items(text, rest):
                yield line, first
        else:
            seg = re.match(r"\w+", text[rest:])
            if seg:
                yield line, seg.group(0)


def root_reexports(lib_text):
    """Name re-exported at the crate root → the module it comes from."""
    names = {}
    for m in re.finditer(r"pub use (\w+)::([^;]*);", strip_comments(lib_text)):
        for name in re.findall(r"\w+", m.group(2)):
            names.setdefault(name, m.group(1))
    return names


def depth_of(rel):
    """How many modules deep a file (relative to src/) is."""
    parts = rel.split(os.sep)
    return len(parts) - (1 if parts[-1] == "mod.rs" else 0)


def module_of(rel):
    """The top-level module a file (relative to src/) belongs to."""
    head = rel.split(os.sep)[0]
    return head[:-3] if head.endswith(".rs") else head


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "src")
    with open(os.path.join(src, "lib.rs"), encoding="utf-8") as f:
        reexports = root_reexports(f.read())
    breaches, unknown = [], []
    for root, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)
            if rel in EXEMPT:
                continue
            module = module_of(rel)
            if module not in RANK:
                unknown.append(f"{rel}: module `{module}` is in no layer (add it to LAYERS)")
                continue
            rank = RANK[module]
            with open(path, encoding="utf-8") as f:
                text = without_foot_tests(strip_comments(f.read()))
            for line, first in crate_paths(text, depth_of(rel)):
                target = reexports.get(first, first)
                if target not in RANK:
                    unknown.append(f"{rel}:{line}: crate::{first} is in no layer")
                    continue
                to = RANK[target]
                if module in LAYERS[0][1] and target != module:
                    breaches.append(
                        f"{rel}:{line}: a leaf imports crate::{first} ({NAME[to]})"
                    )
                elif to > rank:
                    breaches.append(
                        f"{rel}:{line}: {NAME[rank]} imports crate::{first}, "
                        f"from {NAME[to]} below it"
                    )
    breaches = list(dict.fromkeys(breaches))
    for line in unknown + breaches:
        print(line)
    if unknown:
        return 2
    if breaches:
        print(f"layers: {len(breaches)} import(s) against the order "
              + " > ".join(NAME))
        return 1
    print("layers: every import goes up the order " + " > ".join(NAME))
    return 0


if __name__ == "__main__":
    sys.exit(main())
