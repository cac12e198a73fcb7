#!/usr/bin/env python3
"""Checks the links of the repository's Markdown files into its own files.

    scripts/check_links.py        prints every broken or stale link; exit 1 if any

A link [text](path) must name a file or folder that exists. A link to a line,
[text](path#L120), must name a line the file has; when its text names code
in backticks ([`row_max`](...#L190)), each name must stand within a few
lines of that line, so that a link left behind when the code moved is
caught. A link to a whole file followed by names in backticks in
parentheses ([nn/src/pooling.cpp](nn/src/pooling.cpp) (`attention_pool`), as
README.md's "Start here" table writes them) must name a file that holds each
of them. Links out of the repository (http:, mailto:) and to headings are
not checked.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`]+)`")
WINDOW = 8  # how far from the linked line a named piece of code may start
# A file link's names, right after it: " (`attention_pool`, `DotScoring`)".
NAMED_AFTER = re.compile(r"\s*\(((?:`[^`]+`(?:,\s*)?)+)\)")


def markdown_files():
    """The tracked .md files; outside a git checkout, every .md file but the
    build folders' and the learner's exercises."""
    try:
        out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
        return [line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for folder, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith(("build", ".", "my-exercises"))]
            found += [os.path.relpath(os.path.join(folder, f), ROOT) for f in files if f.endswith(".md")]
        return sorted(found)


def names_in(text):
    """The identifiers a link's text names in backticks: `row_max` -> row_max,
    `Tensor DotProductAttention::forward` -> forward."""
    names = []
    for code in CODE.findall(text):
        for part in code.split(","):
            words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", part)
            if words:
                names.append(words[-1])
    return names


def problems(md):
    found = []
    with open(os.path.join(ROOT, md), encoding="utf-8") as f:
        text = f.read()
    in_code_block = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            in_code_block = not in_code_block
        if in_code_block:
            continue
        for match in LINK.finditer(line):
            label, target = match.group(1), match.group(2)
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(ROOT, os.path.dirname(md), path))
            where = f"{md}:{number}: [{label}]({target})"
            if not os.path.exists(full):
                found.append(f"{where}: no such file")
                continue
            line_anchor = re.fullmatch(r"L([0-9]+)", anchor)
            after = NAMED_AFTER.match(line, match.end())
            if not anchor and after and os.path.isfile(full):
                with open(full, encoding="utf-8") as f:
                    content = f.read()
                for name in names_in(after.group(1)):
                    if not re.search(r"\b" + re.escape(name) + r"\b", content):
                        found.append(f"{where}: `{name}` is not in the file")
            if not line_anchor:
                continue
            with open(full, encoding="utf-8") as f:
                lines = f.read().split("\n")
            at = int(line_anchor.group(1))
            if at > len(lines):
                found.append(f"{where}: the file has {len(lines)} lines")
                continue
            near = "\n".join(lines[max(0, at - 1 - WINDOW):at + WINDOW])
            for name in names_in(label):
                if not re.search(r"\b" + re.escape(name) + r"\b", near):
                    hits = [i + 1 for i, l in enumerate(lines) if re.search(r"\b" + re.escape(name) + r"\b", l)]
                    hint = f" (it is at line {hits[0]})" if hits else " (not in the file)"
                    found.append(f"{where}: `{name}` is not near line {at}{hint}")
    return found


def main():
    found = [p for md in markdown_files() for p in problems(md)]
    for p in found:
        print(p)
    print(f"check_links.py: {len(found)} broken or stale links")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
