#!/usr/bin/env python3
"""Which of each tutorial's checks fail under a fault of which op.

    scripts/tutorial_faults.py [--build DIR] [--ops a,b] [--tutorials 02,05] [--out FILE]

Runs every tutorial (DIR/tutorial_NN_*, --no-pause) once as it is and once
under ATTOGRAD_FAULT=OP for every op that has a fault (core/src/fault.h),
and writes a Markdown table per tutorial: its checks down, the ops across,
FAILED where that op's fault made the check fail. A check no fault fails is
a check that holds whatever those ops compute. The build must have
ATTOGRAD_FAULTS on (test builds do).
"""
import argparse
import glob
import os
import re
import subprocess
import sys

CHECK = re.compile(r"^check: (.*) \.\.\. (ok|FAILED)", re.M)


def faulted_ops(program):
    """The ops that have a fault, as the library lists them when it refuses a name no op has."""
    _, _, error = run(program, "?")
    listed = re.search(r"the ops that do: (.*)", error)
    if not listed:
        sys.exit(f"tutorial_faults.py: {program} did not list the ops with a fault (a build "
                 f"without ATTOGRAD_FAULTS?):\n{error}")
    return listed.group(1).strip().split(", ")


def run(program, fault):
    env = dict(os.environ)
    env.pop("ATTOGRAD_FAULT", None)
    if fault:
        env["ATTOGRAD_FAULT"] = fault
    out_dir = "/tmp/tutorial_faults_out"
    result = subprocess.run([program, "--no-pause", "--out", out_dir], env=env,
                            capture_output=True, text=True)
    return result.returncode, CHECK.findall(result.stdout), result.stderr.strip()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--ops", default="", help="comma-separated (default: every op with a fault)")
    parser.add_argument("--tutorials", default="")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    wanted = set(args.tutorials.split(",")) if args.tutorials else None
    programs = sorted(glob.glob(os.path.join(args.build, "tutorial_[0-9][0-9]_*")))
    if not programs:
        sys.exit(f"tutorial_faults.py: no tutorial programs in {args.build}")
    ops = args.ops.split(",") if args.ops else faulted_ops(programs[0])
    lines = []
    for program in programs:
        name = os.path.basename(program)
        if wanted and name[9:11] not in wanted:
            continue
        status, clean, error = run(program, None)
        checks = [what for what, verdict in clean]
        failing = {}  # op -> set of checks that failed
        exits = {}
        for op in ops:
            status_op, results, error_op = run(program, op)
            failing[op] = {what for what, verdict in results if verdict == "FAILED"}
            # A check that never ran (an error ended the program) counts as failed.
            if status_op != 0 and not failing[op] and error_op:
                failing[op] = {"(stopped: " + error_op.splitlines()[-1][:80] + ")"}
            exits[op] = status_op
            print(f"{name} {op}: exit {status_op}, {len(failing[op])} failed", file=sys.stderr)
        used = [op for op in ops if failing[op] or exits[op] != 0]
        lines.append(f"### {name}\n")
        if status != 0:
            lines.append(f"(exits {status} without a fault)\n")
        lines.append("| check | " + " | ".join(used) + " |")
        lines.append("|---|" + "---|" * len(used))
        for what in checks:
            marks = ["FAILED" if what in failing[op] else "" for op in used]
            lines.append(f"| {what} | " + " | ".join(marks) + " |")
        extra = sorted({w for op in used for w in failing[op]} - set(checks))
        for what in extra:
            lines.append(f"| {what} | " + " | ".join("x" if what in failing[op] else "" for op in used) + " |")
        lines.append("")
    header = [
        "<!-- written by scripts/tutorial_faults.py from the tutorials' runs; edit the script, "
        "not this file -->",
        "# Which check fails when which op is wrong",
        "",
        "Each tutorial run once under `ATTOGRAD_FAULT=OP` for every op that has a fault "
        "(core/src/fault.h: the op's result y becomes y * 1.01 + 0.001). FAILED: that "
        "check failed under that op's fault. Only the ops under whose fault something "
        "failed (or the program stopped) have a column; a check with no FAILED holds "
        "whatever those ops compute to 1%: a claim about an outcome (training learns, "
        "search finds) or about ops without a fault. ctest runs the ops each tutorial "
        "teaches (FAULTS in tutorials/CMakeLists.txt) as tutorial_NN_fault_OP.",
        "",
    ]
    text = "\n".join(header + lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
