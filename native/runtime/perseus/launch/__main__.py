"""`python -m perseus.launch [ARGS...]`: print this process's launch environment as JSON (ARGS are read like
the arguments a platform appends, e.g. ModelArts' --init_method ... --rank R --world_size N)."""

import json
import sys

from . import LaunchEnvironmentError, detect


def main() -> int:
    try:
        env = detect()
    except LaunchEnvironmentError as exc:
        print("perseus.launch: error: {}".format(exc), file=sys.stderr)
        return 1
    print(json.dumps(env.to_dict(), indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
