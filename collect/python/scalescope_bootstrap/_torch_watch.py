"""Hooks torch when the job imports it, never before.

A finder first on sys.meta_path sees the import of "torch", lets the other
finders find it as usual and wraps the loader: the module is executed
exactly as it would be, and the hooks go in after it finished. If torch
fails to import, the job sees the same exception; the record says so.
"""

import sys

from . import _record


class _TorchFinder:
    def __init__(self, record):
        self.record = record
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self.busy:
            return None
        self.busy = True
        try:
            import importlib.util

            spec = importlib.util.find_spec(name)
        except Exception:
            return None  # the normal import reports it
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _HookingLoader(spec.loader, self.record)
        return spec

    # Python < 3.4 finders; never used, but harmless.
    def find_module(self, name, path=None):
        return None


class _HookingLoader:
    def __init__(self, loader, record):
        self.loader = loader
        self.record = record

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        try:
            self.loader.exec_module(module)
        except BaseException as e:
            self.record.set("torch", "import failed: %s: %s" % (type(e).__name__, e))
            self.record.write()
            raise
        _remove_finder()
        # torch keeps its own loader, as if imported without the bootstrap.
        try:
            module.__loader__ = self.loader
            if getattr(module, "__spec__", None) is not None:
                module.__spec__.loader = self.loader
        except Exception:
            pass
        try:
            from . import _hooks

            _hooks.install(module, self.record)
        except Exception as e:
            self.record.error("hooks", e)
        self.record.write()

    def __getattr__(self, name):  # get_data, is_package, ... as the real loader
        return getattr(self.loader, name)


_finder = None


def install(record):
    global _finder
    if "torch" in sys.modules:  # imported by an earlier sitecustomize or .pth file
        from . import _hooks

        _hooks.install(sys.modules["torch"], record)
        record.write()
        return
    _finder = _TorchFinder(record)
    sys.meta_path.insert(0, _finder)


def _remove_finder():
    try:
        sys.meta_path.remove(_finder)
    except ValueError:
        pass
