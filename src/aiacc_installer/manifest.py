"""The mirror's manifest.json against the table this script embeds: same release, same cells, same
wheels; what it publishes."""
import os

from .common import fail, say
from .table import MIRROR_PATHS, load_table, same_wheel_other_platform


def table_entry(framework, version, cuda, python, arch):
    return (framework, version, cuda or "cpu", python or "any", arch)


def check_manifest(manifest, cells, release, common_path):
    """The mirror publishes this script's release, built from the same table. Returns {path: record}."""
    if manifest.get("release") != release:
        fail("mirror_mismatch", "the mirror publishes AIACC-Training %s, this script installs %s: use the install "
             "script that mirror publishes, or the mirror of release %s" % (manifest.get("release"), release, release))
    mine = dict((table_entry(c.framework, c.version, c.accel, c.python, c.arch), c.path) for c in cells)
    theirs = dict((table_entry(r["framework"], r["framework_version"], r.get("cuda"), r.get("python"), r["arch"]), r["path"])
                  for r in manifest.get("cells", []))
    differences = []
    for key in sorted(set(mine) | set(theirs)):
        if key in mine and key in theirs and mine[key] != theirs[key] and same_wheel_other_platform(mine[key], theirs[key]):
            MIRROR_PATHS[mine[key]] = theirs[key]  # the tag the build proved: the mirror's file is this cell's
            continue
        if mine.get(key) != theirs.get(key):
            differences.append("  %s: this script %s, the mirror %s" % (" ".join(key), mine.get(key, "(no cell)"), theirs.get(key, "(no cell)")))
    common = manifest.get("common", {})
    if common.get("path") != common_path:
        differences.append("  perseus-common: this script %s, the mirror %s" % (common_path, common.get("path")))
    if differences:
        fail("mirror_mismatch", "the mirror's manifest.json and this script's table of AIACC-Training %s disagree "
             "(%d differences):\n%s\nDownload the install script from the same mirror, or point --mirror at the "
             "mirror this script came from" % (release, len(differences), "\n".join(differences[:10])))
    records = dict((r["path"], r) for r in manifest["cells"])
    records[common_path] = dict(common, status="built")
    return records


def read_manifest(mirror, release):
    """{path: record} of what the mirror publishes, checked against this script's table (exit 9 when the
    mirror cannot be read, 11 when it disagrees)."""
    manifest = mirror.read_json("manifest.json")
    records = check_manifest(manifest, load_table(), release, os.environ["AIACC_COMMON_WHEEL"])
    say("mirror:     %s (manifest of AIACC-Training %s agrees with this script)" % (mirror.location, release))
    return records


def published_paths(records):
    return set(path for path, record in records.items() if record.get("status") == "built")


def check_published(chosen, records):
    """Every chosen wheel is one the mirror publishes (exit 11 otherwise)."""
    published = published_paths(records)
    for _, cell, _ in chosen:
        if cell.path not in published:
            fail("mirror_mismatch", "the mirror does not publish %s (not built for this release). Install from a "
                 "mirror that has it, or pass --framework for the others" % cell.path)
