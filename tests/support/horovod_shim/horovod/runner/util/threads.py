"""The one helper Horovod's test utilities import from horovod.runner.util.threads."""

import threading


def in_thread(target, args=(), name=None, daemon=True, silent=False):
    """Start `target(*args)` in a new thread and return the thread."""
    if not isinstance(args, tuple):
        args = (args,)
    if silent:
        def run():
            try:
                target(*args)
            except BaseException:
                pass
        thread = threading.Thread(target=run, name=name, daemon=daemon)
    else:
        thread = threading.Thread(target=target, args=args, name=name, daemon=daemon)
    thread.start()
    return thread
