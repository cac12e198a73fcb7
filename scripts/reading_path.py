#!/usr/bin/env python3
"""docs/reading.md, the reading path: from Tensor to additive attention's
backward, file by file and function by function, with the lines each takes
today. The path is the list below; the line numbers and counts are read
from the code, so the page stays true as the code moves.

    scripts/reading_path.py            writes docs/reading.md, and README.md's count
    scripts/reading_path.py --check    exits 1 when either is not what it would write

A stop names a file and the line a definition starts with (a regular
expression matched at the start of a line); it spans from the comment just
above that line to the brace that closes the definition. A stop that is no
longer found stops the script, naming it: the path must be fixed by hand.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "docs", "reading.md")
README = os.path.join(ROOT, "README.md")
# The README's sentence that quotes the total: kept in step with the page.
README_TOTAL = re.compile(r"the code to read is [0-9,]+ lines")
BUDGET = 2000  # the most a reader is asked to read

# (part, file, start of the definition, what to look for)
PATH = [
    ("A tensor", "core/include/attograd/tensor.h", r"class TensorImpl \{",
     "a tensor is a view: shared storage, an offset, a shape and strides; transpose and "
     "expand change the strides, not the data"),
    ("A tensor", "core/include/attograd/tensor.h", r"class Tensor \{",
     "the handle you use: a shared pointer to a TensorImpl, so copies share data and grad"),
    ("A tensor", "core/src/shape.cpp", r"Shape broadcast_shapes\(",
     "NumPy's rule: align at the right, a 1 stretches"),
    ("A tensor", "core/src/elementwise.h", r"Tensor map_binary\(",
     "one loop for every elementwise op: a broadcast input is read with stride 0"),
    ("The autograd", "core/include/attograd/autograd.h", r"class Node \{",
     "a node per op: its inputs and its backward, a function from dL/dout to dL/dinputs"),
    ("The autograd", "core/include/attograd/autograd.h",
     r"void record\(Tensor& out, const char\* name, std::span",
     "how an op joins the graph: it hands record() its backward as a lambda"),
    ("The autograd", "core/src/autograd.cpp", r"Tensor sum_to_shape\(",
     "a broadcast input's gradient summed back to its own shape"),
    ("The autograd", "core/src/autograd.cpp", r"void Tensor::backward\(",
     "L.backward(): seed dL/dL = 1 and sweep"),
    ("The autograd", "core/src/autograd.cpp", r"std::vector<Node\*> Sweep::topological_order\(",
     "every node once, outputs before inputs, without recursion"),
    ("The autograd", "core/src/autograd.cpp", r"void Sweep::run\(",
     "each node's backward in that order, gradients added where paths meet"),
    ("The ops", "core/src/ops_binary.cpp", r"Tensor mul\(",
     "forward and backward side by side: dL/da = g * b, dL/db = g * a"),
    ("The ops", "core/src/ops_unary.cpp", r"Tensor tanh\(",
     "dL/dx = g * (1 - y^2), from the saved output"),
    ("The ops", "core/src/ops_reduce.cpp", r"Tensor sum\(const Tensor& x, const std::vector<int64_t>& dims",
     "a sum's backward broadcasts g back over the summed dim"),
    ("The ops", "core/src/ops_matmul.cpp", r"Tensor product\(",
     "C = A B; dA = dC B^T, dB = A^T dC"),
    ("The ops", "core/src/gemm_naive.cpp", r"void naive\(",
     "the matrix product as three loops: the reference every fast kernel is tested against"),
    ("Softmax", "core/src/ops_softmax.cpp", r"void forward_row\(",
     "subtract the row's max, exponentiate, normalise"),
    ("Softmax", "core/src/ops_softmax.cpp", r"void backward_row\(",
     "dx = y * (g - sum(g * y)): the Jacobian never built"),
    ("Softmax", "core/src/ops_softmax.cpp", r"Tensor reference::masked_softmax_last\(",
     "masking as d2l does it: masked scores replaced, then the softmax"),
    ("Softmax", "nn/src/masks.cpp", r"Tensor masked_softmax\(const Tensor& X",
     "d2l's masked_softmax: valid lengths to a keep mask"),
    ("Attention", "core/src/ops_attention.cpp", r"Tensor reference::additive_scores\(",
     "additive scores as d2l broadcasts them; ATTOGRAD_REFERENCE=1 runs this line"),
    ("Attention", "core/src/ops_attention.cpp", r"Tensor additive_scores\(",
     "the fused op that replaces it: checks, then the rows; its backward recorded beside it"),
    ("Attention", "nn/src/scoring_additive.cpp", r"Tensor score\(",
     "additive's score: W_q q, then the fused scores against the remembered W_k k"),
    ("Attention", "nn/src/scoring_dot.cpp", r"Tensor score\(",
     "dot's score: Q K^T / sqrt(d), no parameters"),
    ("Attention", "nn/src/scoring.cpp", r"Attended ScoringFunction::attend_with_weights\(",
     "every scoring function's call: its scores, then the one pooling step"),
    ("Attention", "nn/src/pooling.cpp", r"Pooled attention_pool\(",
     "the one pooling step: masks checked once, masked softmax, dropout, the values' product"),
    ("Attention", "nn/src/attention.cpp", r"Tensor AdditiveAttention::forward\(",
     "d2l's class: the table's additive behind d2l's call"),
]


class Missing(Exception):
    pass


def span(lines, pattern, path):
    """(first, last) 1-based lines of the definition starting with pattern."""
    regex = re.compile(r"\s*" + pattern)
    start = next((i for i, line in enumerate(lines) if regex.match(line)), None)
    if start is None:
        raise Missing(f"{path}: no line starts with /{pattern}/")
    first = start
    while first > 0 and lines[first - 1].lstrip().startswith("//"):
        first -= 1
    depth, seen = 0, False
    for i in range(start, len(lines)):
        code = lines[i].split("//")[0]
        depth += code.count("{") - code.count("}")
        seen = seen or "{" in code
        if seen and depth == 0:
            return first + 1, i + 1
    raise Missing(f"{path}: the definition at line {start + 1} never closes")


def total_lines(text):
    return int(re.search(r"Total: ([0-9]+) lines", text).group(1))


def page():
    rows, total, files = [], 0, {}
    for part, path, pattern, what in PATH:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            lines = f.read().split("\n")
        first, last = span(lines, pattern, path)
        count = last - first + 1
        total += count
        files.setdefault(path, 0)
        files[path] += count
        name = re.sub(r"\\(.)", r"\1", pattern).rstrip("({ ").split("(")[0]
        rows.append(f"| {part} | [{path}:{first}](../{path}#L{first}) | `{name}` | {count} | {what} |")
    if total > BUDGET:
        raise Missing(f"the path is {total} lines, over the budget of {BUDGET}")
    return "\n".join([
        "<!-- written by scripts/reading_path.py from the code; edit the script, not this file -->",
        "# The reading path: from Tensor to attention's backward",
        "",
        f"From a tensor to additive attention's backward, attograd is {len(PATH)} definitions: "
        f"**{total} lines** in {len(files)} files, read in this order. "
        "Everything else in core/ is either the fast path (the SIMD GEMM, the vector kernels, "
        "the streamed attention, the threads: see attograd/reference.h, whose switch runs "
        "everything on the code below instead) or file formats.",
        "",
        "Run any tutorial with `ATTOGRAD_REFERENCE=1` and the library computes with exactly "
        "these lines: the fused ops take their references (`reference::...`), the matrix "
        "products the three loops, one thread.",
        "",
        "| part | where | definition | lines | what to look for |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Total: {total} lines. Counted from the comment above each definition to its closing "
        "brace; `scripts/reading_path.py --check` (a test) fails when this page no longer "
        "matches the code.",
        "",
    ])


def main(argv):
    try:
        text = page()
    except Missing as e:
        sys.exit(f"reading_path.py: {e}")
    sentence = f"the code to read is {total_lines(text)} lines"
    with open(README, encoding="utf-8") as f:
        readme = f.read()
    if not README_TOTAL.search(readme):
        sys.exit("reading_path.py: README.md has no sentence 'the code to read is N lines'")
    if "--check" in argv:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text or sentence not in readme:
                sys.exit("reading_path.py: docs/reading.md or README.md's count is out of date: "
                         "run scripts/reading_path.py")
        return
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    with open(README, "w", encoding="utf-8") as f:
        f.write(README_TOTAL.sub(sentence, readme))
    print(f"reading_path.py: wrote {OUT} and README.md's count")


if __name__ == "__main__":
    main(sys.argv[1:])
