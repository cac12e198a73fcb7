"""What the tests of the Python scripts (tests/*_test.py) share: a failed
check is kept and the run goes on, so that one run lists every wrong figure;
the end lists them (exit status 1) or says that all passed."""
import sys


class Checks:
    def __init__(self, name):
        self.name = name
        self.failures = []

    def __call__(self, condition, what):
        if not condition:
            self.failures.append(what)

    def close(self, actual, expected, tolerance, what):
        self(abs(actual - expected) <= tolerance,
             f"{what}: {actual}, expected {expected} ± {tolerance}")

    def finish(self):
        for failure in self.failures:
            print(f"{self.name}: {failure}", file=sys.stderr)
        if self.failures:
            sys.exit(1)
        print(f"{self.name}: all checks passed")


def source_dir_argument(name):
    """The test's one argument: the source tree."""
    if len(sys.argv) != 2:
        sys.exit(f"usage: {name}.py SOURCE_DIR")
    return sys.argv[1]
