#!/usr/bin/env bash
# Real conda (built from its own source) runs `conda env create -f FILE -p PREFIX` for real on rendered conda
# files, against local stand-in channels, then imports the packages in each new environment.
#
#   bash bench/conda_real_install.sh WORK DIST [FILE...]
#
# WORK: a folder OUTSIDE this repository holding src-<version>/conda (`git archive <tag> conda` of
# github.com/conda/conda with conda/_version.py written, e.g. 26.5.3 and 26.7.1) and venv/ (a Python 3.11 with
# conda's PyPI dependencies; see bench/conda_real_channels.sh). Every src-* is run.
# DIST: the output root of `aiacc-build build`, `render --release 2.0.0 --release 1.5.0` and `index` (dist/ by
# default): the three default cells' files and wheels of 2.0.0, and 1.5.0's torch_1.7.1_cuda11.0_py36.yaml.
#
# Channels (WORK/install/channels, channel_alias file://): `conda-forge` holds this machine's pyenv Pythons 3.6,
# 3.9, 3.11 repackaged as `python` and the pips they bundle (src/aiacc_build/checks/conda_channel.py) plus the
# metadata-only stubs of matrix/facts/conda/stand_in_stubs.yaml; `pytorch` holds the stub of pytorch 1.7.1
# (checks/conda_stubs.py). The release's mirror URL in the files' pip lines is pointed at DIST/2.0.0 served on
# 127.0.0.1 (aiacc_build.index.serve.MirrorServer, a free port); conda runs those pip lines itself. The manual's
# 1.5.0 file runs without its pip section (its lines name 1.5.0 wheels for CUDA 11.0 that no build here makes).
# Each run gets the environment the files' header names (CONDA_DEFAULT_CHANNELS=conda-forge), an empty package
# cache, PIP_RETRIES=0 (download.pytorch.org is unreachable here) and this user's pip configuration.
# FILE: some of the four files (default: all). CONDA_OVERRIDE_CUDA, when set, is passed on (conda's __cuda virtual
# package: the CUDA version a driver supports; unset, conda detects it, and this machine has no NVIDIA driver).
# FROM_URL=1: conda reads each file from the served copy (`-f http://127.0.0.1:PORT/files/FILE`), as the manual's
# `conda env create -f https://.../conda/latest/FILE` does; otherwise from a local path. Prints one Markdown table row per conda version and file; logs: WORK/install/log-<version>-<file>.txt.
set -euo pipefail
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0;; esac
[ $# -ge 2 ] || { usage >&2; echo "error: WORK and DIST are required" >&2; exit 2; }
WORK="$(cd "$1" && pwd)"; DIST="$(cd "$2" && pwd)"; shift 2
FILES=("$@")
[ ${#FILES[@]} -gt 0 ] || FILES=(torch_2.13.0_cpu_py311.yaml tensorflow_2.21.0_cpu_py311.yaml mxnet_1.9.1_cpu_py39.yaml torch_1.7.1_cuda11.0_py36.yaml)
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$REPO/.venv/bin/python"
OUT="$WORK/install"
ls -d "$WORK"/src-*/conda >/dev/null 2>&1 || { echo "no $WORK/src-<version>/conda: see --help" >&2; exit 2; }
[ -x "$WORK/venv/bin/python" ] || { echo "no $WORK/venv/bin/python (conda's dependencies): see --help" >&2; exit 2; }
[ -f "$DIST/2.0.0/conda/latest/torch_2.13.0_cpu_py311.yaml" ] && [ -f "$DIST/1.5.0/conda/latest/torch_1.7.1_cuda11.0_py36.yaml" ] \
  || { echo "$DIST lacks the rendered files: aiacc-build build, render --release 2.0.0 --release 1.5.0, index (--dist $DIST)" >&2; exit 2; }
rm -rf "$OUT/channels" "$OUT/files" "$OUT/home" "$OUT/www"
mkdir -p "$OUT/files" "$OUT/home" "$OUT/www"
ln -s "$DIST/2.0.0" "$OUT/www/mirror"; ln -s "$OUT/files" "$OUT/www/files"  # what the server serves

# the channels and the files as run: mirror URL -> the served copy; the 1.5.0 file without its pip section
"$PY" - "$OUT" "$DIST" <<'EOF'
import sys
from pathlib import Path
import yaml
from aiacc_build.checks.conda_channel import max_prefix_length
from aiacc_build.checks.conda_stubs import write_channels
from aiacc_build.wheels.toolchain import find_interpreter
out, dist = Path(sys.argv[1]), Path(sys.argv[2])
found = {v: find_interpreter(v) for v in ("3.6", "3.9", "3.11")}
missing = [v for v, f in found.items() if f is None]
if missing:
    sys.exit(f"no pyenv Python {', '.join(missing)} here to repackage as conda's python: install it (pyenv install {missing[0]})")
pythons = [Path(f.executable).parent.parent for f in found.values()]
alias, _ = write_channels(out / "channels", pythons)
(out / "condarc").write_text(f"channel_alias: {alias}\n")
(out / "max_prefix").write_text(str(max_prefix_length(pythons)))
manual = dist / "1.5.0" / "conda" / "latest" / "torch_1.7.1_cuda11.0_py36.yaml"
env = yaml.safe_load(manual.read_text())
env["dependencies"] = [d for d in env["dependencies"] if not isinstance(d, dict)]
header = "".join(l + "\n" for l in manual.read_text().splitlines() if l.startswith("#"))
(out / "files" / manual.name).write_text(header + "# (run here without its pip section)\n" + yaml.safe_dump(env, sort_keys=False))
EOF

serve_log="$OUT/serve.txt"; : >"$serve_log"
"$PY" -c '
import sys, time
from pathlib import Path
from aiacc_build.index.serve import MirrorServer
with MirrorServer(Path(sys.argv[1])) as server:
    print(server.url, flush=True)
    time.sleep(86400)
' "$OUT/www" >"$serve_log" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$serve_log" ] && break; sleep 0.2; done
served=$(head -1 "$serve_log")
case "$served" in http://127.0.0.1:*) ;; *) echo "the mirror server did not start: $(cat "$serve_log")" >&2; exit 1;; esac
"$PY" - "$DIST" "$OUT/files" "$served/mirror" <<'EOF'
import sys
from pathlib import Path
from aiacc_build.checks.conda_pip import rewrite_mirror
from aiacc_build.matrix import load_release
dist, files, served = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
MIRROR = load_release("2.0.0").info.mirror_url
for name in ("torch_2.13.0_cpu_py311.yaml", "tensorflow_2.21.0_cpu_py311.yaml", "mxnet_1.9.1_cpu_py39.yaml"):
    text = (dist / "2.0.0" / "conda" / "latest" / name).read_text()
    lines, count = rewrite_mirror(text.splitlines(), MIRROR, served)
    assert count >= 2, f"{name}: the mirror URL {MIRROR} is not in its pip lines"
    (files / name).write_text("\n".join(lines) + "\n")
EOF

from="$OUT/files"; [ -z "${FROM_URL:-}" ] || from="$served/files"

modules() {
  case "$1" in
    torch_2*) echo "torch perseus perseus.torch";;
    tensorflow_*) echo "tensorflow perseus perseus.tensorflow";;
    mxnet_*) echo "mxnet perseus perseus.mxnet";;
    *) echo "";;
  esac
}

printf '| conda | file | rc | s | what happened |\n| --- | --- | --- | --- | --- |\n'
for version in $(ls "$WORK" | sed -n 's/^src-//p'); do
  for file in "${FILES[@]}"; do
    log="$OUT/log-$version-$file${FROM_URL:+-url}.txt"
    top=$(mktemp -d /tmp/crXXXX); prefix="$top/e"
    [ ${#prefix} -le "$(cat "$OUT/max_prefix")" ] || { echo "$prefix is longer than the stand-in python allows" >&2; exit 1; }
    rm -rf "$OUT/pkgs-$version" "$OUT/root-$version"; mkdir -p "$OUT/root-$version/conda-meta"
    start=$(date +%s.%N)
    set +e
    (cd "$OUT/files" && env -i PATH=/usr/bin:/bin HOME="$OUT/home" PYTHONPATH="$WORK/src-$version" \
      CONDA_ROOT_PREFIX="$OUT/root-$version" CONDA_PKGS_DIRS="$OUT/pkgs-$version" CONDA_SOLVER=classic \
      CONDARC="$OUT/condarc" CONDA_DEFAULT_CHANNELS=conda-forge CONDA_REMOTE_MAX_RETRIES=0 CONDA_PLUGINS_AUTO_ACCEPT_TOS=no \
      ${CONDA_OVERRIDE_CUDA:+CONDA_OVERRIDE_CUDA="$CONDA_OVERRIDE_CUDA"} \
      PIP_CONFIG_FILE="$HOME/.config/pip/pip.conf" PIP_CACHE_DIR="$HOME/.cache/pip" PIP_RETRIES=0 PIP_DISABLE_PIP_VERSION_CHECK=1 \
      timeout 1800 "$WORK/venv/bin/python" -m conda env create -f "$from/$file" -p "$prefix" >"$log" 2>&1)
    rc=$?
    set -e
    took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
    if [ "$rc" = 0 ]; then
      mods=$(modules "$file")
      records=$(ls "$prefix/conda-meta" | grep -c '\.json$' || true)
      python=$("$prefix/bin/python" -c 'import platform; print(platform.python_version())' 2>&1 || true)
      what="env created: $records conda packages, python $python"
      if [ -n "$mods" ]; then
        probe=$(cd "$prefix" && env -i PATH=/usr/bin:/bin "$prefix/bin/python" -c '
import importlib, sys
got = []
for m in sys.argv[1:]:
    mod = importlib.import_module(m)
    assert mod.__file__.startswith(sys.prefix), (m, mod.__file__)
    version = getattr(mod, "__version__", "")
    got.append(f"{m} {version}".strip())
print(", ".join(got))' $mods 2>&1 | tail -1 || true)
        what="$what; imported: $probe"
      else
        stubs=$(grep -l '"license": "metadata-only stand-in"' "$prefix"/conda-meta/*.json 2>/dev/null | xargs -r -n1 basename | sed 's/\.json$//' | tr '\n' ' ' || true)
        probe=$(cd "$prefix" && env -i PATH=/usr/bin:/bin "$prefix/bin/python" -c 'import torch' 2>&1 | tail -1 || true)
        what="$what; metadata-only stubs linked: ${stubs% }; import torch: $probe"
      fi
    else
      what=$(grep -E "Error|Exception|error:|failed" "$log" | grep -v "^ *File " | tail -2 | tr '\n' ' ' | cut -c1-400 || true)
      [ -n "$what" ] || what="see $log"
    fi
    printf '| %s | %s%s | %s | %s | %s |\n' "$version" "$file" "${FROM_URL:+ (-f URL)}${CONDA_OVERRIDE_CUDA:+ (CONDA_OVERRIDE_CUDA=$CONDA_OVERRIDE_CUDA)}" "$rc" "$took" "$what"
    rm -rf "$top"
  done
done
