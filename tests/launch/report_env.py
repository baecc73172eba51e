"""Run by a real launcher: writes this process's detect() result to $REPORT_DIR/<pid>.json."""

import json
import os

from perseus.launch import detect

with open(os.path.join(os.environ["REPORT_DIR"], "{}.json".format(os.getpid())), "w") as f:
    json.dump(detect().to_dict(), f)
