#!/usr/bin/env bash
# check_exports.sh LIB: the engine library exports perseus_engine_* only (no gloo::, no std::, no
# perseus core symbols) and needs neither libgloo nor libstdc++ (both linked statically, hidden).
set -euo pipefail
lib="$1"
exported="$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)"
[ -n "$exported" ] || { echo "FAIL: $lib exports nothing"; exit 1; }
bad="$(echo "$exported" | grep -v '^perseus_engine_' || true)"
if [ -n "$bad" ]; then
  echo "FAIL: $lib exports symbols outside the C ABI:"; echo "$bad" | head -20; exit 1
fi
if nm -D --defined-only -C "$lib" | grep -q 'gloo::'; then echo "FAIL: gloo:: symbols exported"; exit 1; fi
needed="$(readelf -d "$lib" | awk '/NEEDED/ {print $5}')"
if echo "$needed" | grep -Eq 'gloo|hiredis|ibverbs|libmpi|libstdc\+\+'; then
  echo "FAIL: $lib needs: $needed"; exit 1
fi
echo "ok: $(echo "$exported" | wc -l) symbols, all perseus_engine_*; needs: $(echo $needed)"
