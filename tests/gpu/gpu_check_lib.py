"""What the GPU check's checkers share (check_late_rank.py, check_hang.py,
check_torch_merge.py): running the nccl-lens CLI with a time limit, and
PASS/FAIL lines with the numbers seen, so that a run on a GPU can be pasted
into docs/gpu-check.md as it is.

Each checker prints one line per check:
    PASS <what>: <numbers>
    FAIL <what>: <numbers>
    INFO <what>: <numbers>          (printed, never judged)
and exits 0 when every check passed, 1 when one failed, 2 on a usage error."""
import gzip
import json
import os
import subprocess
import sys
import textwrap

WIDTH = 120  # the project's output width


class Checks:
    def __init__(self, name):
        self.name = name
        self.failed = 0
        self.passed = 0

    def say(self, word, what, numbers):
        line = "%s %s%s" % (word, what, ": " + numbers if numbers else "")
        print(textwrap.fill(line, WIDTH, subsequent_indent="     ", break_on_hyphens=False), flush=True)

    def check(self, ok, what, numbers=""):
        self.say("PASS" if ok else "FAIL", what, numbers)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok

    def info(self, what, numbers):
        self.say("INFO", what, str(numbers))

    def done(self):
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed), flush=True)
        return 1 if self.failed else 0


def default_cli():
    """The nccl-lens of LENS_BUILD (default: build/ beside this tree)."""
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.environ.get("LENS_BUILD", os.path.join(here, "..", "..", "build"))
    return os.path.join(build, "bin", "nccl-lens")


def run_cli(cli, args, timeout_s=300):
    """(exit status, stdout, stderr) of `nccl-lens ARGS`; status None when it ran past timeout_s."""
    try:
        p = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, "", "ran past %d s" % timeout_s
    except OSError as e:
        return None, "", str(e)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def cli_json(checks, cli, args, what, ok_status=(0,), timeout_s=300):
    """The JSON `nccl-lens ARGS` prints, or None after a FAIL line saying why."""
    rc, out, err = run_cli(cli, args, timeout_s)
    if rc not in ok_status:
        checks.check(False, what, "nccl-lens %s: exit %s: %s" % (" ".join(args[:2]), rc, err.strip()[-300:]))
        return None
    try:
        return json.loads(out)
    except ValueError as e:
        checks.check(False, what, "nccl-lens %s printed no JSON (%s)" % (args[0], e))
        return None


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if s else None


def quantile(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * q))] if s else None


def read_json_file(path):
    """A JSON file, gzip'd or not (Kineto writes both)."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:2] == b"\x1f\x8b":
        b = gzip.decompress(b)
    return json.loads(b)


def usage_exit(parser, msg):
    parser.print_usage(sys.stderr)
    print("%s: %s" % (parser.prog, msg), file=sys.stderr)
    sys.exit(2)
