# scalescope's Python bootstrap. `scalescope profile` puts this folder first
# on PYTHONPATH, so every Python process of a profiled job runs this file at
# start-up (site.py imports "sitecustomize"). It starts the bootstrap
# (scalescope_bootstrap: step marks, operator and module ranges inside
# windows, ranks and process groups), which never raises, then runs the
# sitecustomize this file shadows, found further along sys.path, exactly as
# Python would have run it: its errors reach site.py unchanged.
#
# Off with `scalescope profile --no-python`; `python -I` and `python -S` skip
# it, and the job then runs as it would without scalescope.


def _scalescope_bootstrap():
    try:
        import scalescope_bootstrap

        scalescope_bootstrap.start()
    except Exception:  # a broken install must not break the job
        pass


def _scalescope_chain_load():
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.realpath(__file__))

    def elsewhere(entry):
        try:
            return os.path.realpath(entry or os.curdir) != here
        except (OSError, ValueError, TypeError):
            return True

    rest = [p for p in sys.path if isinstance(p, str) and elsewhere(p)]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    ours = sys.modules.get("sitecustomize")
    sys.modules["sitecustomize"] = module  # `import sitecustomize` later finds the job's own
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if ours is not None:
            sys.modules["sitecustomize"] = ours
        raise


_scalescope_bootstrap()
del _scalescope_bootstrap
try:
    _scalescope_chain_load()
finally:
    del _scalescope_chain_load
