"""The `perseus` command (from perseus-common). Subcommands: `doctor`. The launcher is `perseusrun`."""

import argparse
import sys
from typing import List, Optional


def parser() -> argparse.ArgumentParser:
    from perseus.run.args import _version

    __version__ = _version()
    p = argparse.ArgumentParser(prog="perseus", description="AIACC-Training (Perseus) runtime tools; jobs start with perseusrun.")
    p.add_argument("--version", action="version", version="perseus-common " + __version__)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    doctor = sub.add_parser(
        "doctor", help="report the launch environment, driver, CUDA, frameworks and perseus wheels; exit 1 on a mismatch",
        description="One report of the launch environment (with the source of every number), the NVIDIA driver, "
                    "the CUDA runtime and toolkit, each installed framework with its build flags, the installed perseus "
                    "wheels and their build manifests, and what to install when something does not match. "
                    "Exit code 1 when a mismatch is found.")
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    p = parser()
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "doctor":
        from perseus import doctor

        return doctor.main(as_json=args.json)
    p.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
