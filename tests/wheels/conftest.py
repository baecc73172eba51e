from local_build import local_build  # noqa: F401  (the session's build of the local cell)
