"""The helper Horovod's tests import from horovod.common.util."""


def is_version_greater_equal_than(ver, target):
    def parts(text):
        return tuple(int(p) for p in str(text).split("+")[0].split(".")[:3] if p.isdigit())
    return parts(ver) >= parts(target)
