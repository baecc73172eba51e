#!/usr/bin/env bash
# Real conda (from its own source) on the rendered conda files: which channels it uses, against local stand-in
# channels, `conda env create -f FILE --dry-run` (a solve, no download, the pip section not run).
#
#   bash bench/conda_real_channels.sh WORK DIST FILE...
#
# WORK: a folder OUTSIDE this repository; it must hold src-<version>/conda (`git archive <tag> conda` of
# github.com/conda/conda, e.g. 26.5.3 and 26.7.1, with conda/_version.py written) and venv/ (Python 3.11 with
# conda's PyPI dependencies: archspec boltons charset-normalizer conda-package-handling distro frozendict msgpack
# packaging platformdirs pluggy pycosat requests ruamel.yaml<0.19 setuptools tqdm truststore zstandard).
# DIST: dist/<release>/conda/latest of `aiacc-build render`. FILE: conda file names in it.
#
# The stand-in channel `conda-forge` (channel_alias file://WORK/channels) holds metadata-only records of python
# 3.9.18 / 3.11.9 and pip 24.0 (no files: enough for a dry-run solve). Two user configurations: a condarc with no
# channels, and one with `channels: [defaults]` (what Anaconda's installers write); `defaults` itself
# (repo.anaconda.com) does not resolve on this network, so a run that reaches for it fails.
set -euo pipefail
WORK="$1"; DIST="$2"; shift 2
mkdir -p "$WORK/channels/conda-forge/linux-64" "$WORK/channels/conda-forge/noarch" "$WORK/plain" "$WORK/withdefaults"
"$WORK/venv/bin/python" - "$WORK/channels/conda-forge" <<'EOF'
import json, sys
def rec(name, version, build, depends, subdir, **extra):
    return dict(name=name, version=version, build=build, build_number=0, depends=depends, subdir=subdir,
                md5="0" * 32, sha256="0" * 64, size=1, license="stand-in", timestamp=0, **extra)
linux = {f"python-{v}-stand_in_0.tar.bz2": rec("python", v, "stand_in_0", [], "linux-64") for v in ("3.9.18", "3.11.9")}
noarch = {"pip-24.0-pyhd8ed1ab_0.tar.bz2": rec("pip", "24.0", "pyhd8ed1ab_0", ["python >=3.7"], "noarch", noarch="python")}
for sub, packages in (("linux-64", linux), ("noarch", noarch)):
    with open(f"{sys.argv[1]}/{sub}/repodata.json", "w") as f:
        json.dump({"info": {"subdir": sub}, "packages": packages, "packages.conda": {}, "repodata_version": 1}, f)
EOF
printf 'channel_alias: file://%s/channels\n' "$WORK" >"$WORK/plain/condarc"
printf 'channel_alias: file://%s/channels\nchannels:\n  - defaults\n' "$WORK" >"$WORK/withdefaults/condarc"

printf '| conda | file | user condarc | environment | rc | s | what happened |\n| --- | --- | --- | --- | --- | --- | --- |\n'
for version in $(ls "$WORK" | sed -n 's/^src-//p'); do
  for file in "$@"; do
    for rc_dir in plain withdefaults; do
      for env in "" "CONDA_CHANNELS=conda-forge" "CONDA_DEFAULT_CHANNELS=conda-forge"; do
        log="$WORK/log-$version-$file-$rc_dir-${env%%=*}.txt"
        start=$(date +%s.%N)
        set +e
        env -i PATH=/usr/bin:/bin HOME="$WORK" ${env:+"$env"} PYTHONPATH="$WORK/src-$version" \
          CONDA_ROOT_PREFIX="$WORK/root-$version" CONDA_PKGS_DIRS="$WORK/pkgs-$version" CONDA_SOLVER=classic \
          CONDARC="$WORK/$rc_dir/condarc" CONDA_REMOTE_MAX_RETRIES=0 \
          timeout 300 "$WORK/venv/bin/python" -m conda env create -f "$DIST/$file" -p "$WORK/env-$version" --dry-run >"$log" 2>&1
        rc=$?
        set -e
        took=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
        what=$(grep -oE "UnavailableInvalidChannel: [^<]*<[^>]*>|CONNECTION FAILED for url <[^>]*>|Failed to resolve '[^']*'|python[-=]{1,2}3\.[0-9.]+[-=]stand_in_0" "$log" | head -1 || true)
        [ -n "$what" ] || what="see $log"
        case "$rc_dir" in plain) cfg="no channels";; *) cfg="channels: [defaults]";; esac
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$version" "$file" "$cfg" "${env:-none}" "$rc" "$took" "$what"
      done
    done
  done
done
