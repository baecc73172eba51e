"""Print the manylinux image the installed cibuildwheel pins for a policy and architecture.

CI builds its builder image on exactly that image, so the /opt/python/cpXY-cpXY interpreters are
the ones the pinned cibuildwheel knows. Usage: python scripts/cibw_pinned_image.py manylinux2014 x86_64
"""

import configparser
import sys
from pathlib import Path


def pinned_image(policy: str, arch: str) -> str:
    try:
        import cibuildwheel
    except ImportError:
        raise SystemExit("cibuildwheel is not installed: pip install the release's pinned cibuildwheel first") from None
    cfg_path = Path(cibuildwheel.__file__).parent / "resources" / "pinned_docker_images.cfg"
    if not cfg_path.is_file():
        raise SystemExit(f"{cfg_path} not found: this cibuildwheel version keeps its pinned images elsewhere")
    config = configparser.ConfigParser(inline_comment_prefixes=("#",))  # 4.x: "image@sha256:...  # date"
    config.read(cfg_path, encoding="utf-8")
    if not config.has_option(arch, policy):
        known = ", ".join(config.options(arch)) if config.has_section(arch) else "none"
        raise SystemExit(f"cibuildwheel {cibuildwheel.__version__} pins no {policy} image for {arch} (pins: {known})")
    return config.get(arch, policy)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    print(pinned_image(sys.argv[1], sys.argv[2]))
