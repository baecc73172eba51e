"""Output, failure and the small text helpers every part of the installer uses."""
import re
import subprocess
import sys

from .exits import CODE


def say(text=""):
    sys.stdout.write(text + "\n")


def fail(code_name, text):
    sys.stderr.write("error: " + text + "\n")
    sys.exit(CODE[code_name])


def numbers(version):
    """'2.13.0' -> (2, 13, 0); stops at the first part that is not a number."""
    out = []
    for part in re.split(r"[.+]", version):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def major_minor(version):
    return ".".join(str(n) for n in numbers(version)[:2])


def normalise(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def run(command):
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        out, _ = proc.communicate(timeout=20)
        return out if proc.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def indent(text):
    return "\n".join("    " + line for line in text.strip().splitlines()[-15:])
