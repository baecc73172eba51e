"""Horovod's exception types (horovod.common.exceptions) and perseus's own, named the same in every binding."""


class HorovodInternalError(RuntimeError):
    """A collective failed inside the engine (Horovod raises it from synchronize(); elastic training catches it)."""


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod's elastic signal that the set of hosts changed (perseus raises it only where elastic runs)."""

    def __init__(self, skip_sync: bool = False) -> None:
        super().__init__("the hosts of this job changed")
        self.skip_sync = skip_sync


class HorovodVersionMismatchError(ImportError):
    """The framework a binding was built for is not the one installed."""

    def __init__(self, name: str, version: str, built_version: str) -> None:
        super().__init__("Framework {} installed with version {} but found version {}. Reinstall the perseus wheel "
                         "of this framework version (bash install_AIACC-Training.sh picks it).".format(
                             name, built_version, version))
        self.name, self.version, self.built_version = name, version, built_version


class HorovodNotInitialized(ValueError):
    """A Horovod API call before hvd.init() (Horovod raises ValueError too)."""

    def __init__(self, message: str = "Horovod has not been initialized; use hvd.init().") -> None:
        super().__init__(message)


class HorovodCollectiveError(HorovodInternalError):
    """Ranks disagree about a collective, or a collective cannot run now (the message names the tensor and what
    differs); raised on every rank alike."""


class NotSupportedByPerseus(NotImplementedError):
    """A Horovod feature perseus does not have (the message names it and what to do instead)."""


def not_initialized() -> HorovodNotInitialized:
    return HorovodNotInitialized()
