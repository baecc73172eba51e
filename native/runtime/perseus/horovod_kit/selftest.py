"""The skeleton of the self-test every framework wheel ships, run by the local build, the CI test command and the
install script alike (`python -m perseus.<framework>._selftest [RELEASE [FRAMEWORK_PUBLIC_VERSION]]`): its
arguments, its failure (a message and exit 1), and the check of the library's build manifest against the running
framework and the expected release. The binding adds its framework's own checks (a compression op against the
framework's cast, a one-rank engine collective)."""

import sys
from typing import Any, List, Mapping, Optional, Tuple


class SelfTest:
    def __init__(self, binding: str, framework: str, version_key: str) -> None:
        """binding: perseus.mxnet; framework: the framework as messages name it (mxnet); version_key: the manifest's
        key of the framework version the library was built against (mxnet_version)."""
        self.binding, self.framework, self.version_key = binding, framework, version_key

    def arguments(self, argv: Optional[List[str]]) -> Optional[Tuple[Optional[str], Optional[str]]]:
        """(release, framework public version), None where not given; None after writing the usage when the
        arguments are not those (the caller exits 2)."""
        args = list(sys.argv[1:] if argv is None else argv)
        if len(args) > 2 or any(a.startswith("-") for a in args):
            sys.stderr.write("usage: python -m {}._selftest [RELEASE [{}_PUBLIC_VERSION]]\n".format(
                self.binding, self.framework.upper()))
            return None
        return (args[0] if args else None, args[1] if len(args) > 1 else None)

    def fail(self, text: str) -> None:
        """Ends the self-test: the message on stderr, exit status 1."""
        sys.stderr.write("{} self-test failed: {}\n".format(self.binding, text))
        raise SystemExit(1)

    def check_manifest(self, manifest: Mapping[str, Any], running_version: str, release: Optional[str],
                       framework_version: Optional[str], core_release: str) -> None:
        """The manifest compiled into the library names the running framework, the expected release (when given)
        and the release the engine core reports."""
        built_for = manifest[self.version_key]
        if built_for != running_version:
            self.fail("built for {0} {1}, running {0} {2}".format(self.framework, built_for, running_version))
        built_release, _, built_framework = str(manifest["version"]).partition("+")
        wanted_framework = framework_version or built_framework
        if release is not None and (built_release, built_framework) != (release, wanted_framework):
            self.fail("manifest says {} for {} {}; expected release {} for {} {}".format(
                manifest["version"], self.framework, built_for, release, self.framework, wanted_framework))
        if core_release != built_release:
            self.fail("core reports release {}, the wheel is {}".format(core_release, manifest["version"]))
