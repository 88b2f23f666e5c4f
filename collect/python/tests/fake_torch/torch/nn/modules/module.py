from collections import OrderedDict

_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_always_called = {}
_next_id = [0]


class RemovableHandle:
    def __init__(self, tables, key):
        self.tables, self.key = tables, key

    def remove(self):
        for t in self.tables:
            t.pop(self.key, None)


def register_module_forward_pre_hook(hook):
    _next_id[0] += 1
    _global_forward_pre_hooks[_next_id[0]] = hook
    return RemovableHandle([_global_forward_pre_hooks], _next_id[0])


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    _next_id[0] += 1
    _global_forward_hooks[_next_id[0]] = hook
    if always_call:
        _global_forward_hooks_always_called[_next_id[0]] = True
    return RemovableHandle([_global_forward_hooks, _global_forward_hooks_always_called], _next_id[0])


class Module:
    def __init__(self):
        object.__setattr__(self, "_modules", OrderedDict())

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(prefix + ("." if prefix else "") + name)

    def parameters(self):
        return []

    def __call__(self, *args):
        for hook in list(_global_forward_pre_hooks.values()):
            hook(self, args)
        out = self.forward(*args)
        for hook in list(_global_forward_hooks.values()):
            hook(self, args, out)
        return out


class Linear(Module):
    def forward(self, x):
        from ... import autograd

        return autograd._op("aten::linear", "fake_gemm_kernel", x)


class Sequential(Module):
    def __init__(self, *mods):
        super().__init__()
        for i, m in enumerate(mods):
            setattr(self, str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x
