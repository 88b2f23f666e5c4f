import os
from collections import OrderedDict

_global_optimizer_post_hooks = OrderedDict()
_next_id = [0]


class RemovableHandle:
    def __init__(self, table, key):
        self.table, self.key = table, key

    def remove(self):
        self.table.pop(self.key, None)


if os.environ.get("FAKE_TORCH_NO_STEP_HOOK") != "1":

    def register_optimizer_step_post_hook(hook):
        _next_id[0] += 1
        _global_optimizer_post_hooks[_next_id[0]] = hook
        return RemovableHandle(_global_optimizer_post_hooks, _next_id[0])


class Optimizer:
    def __init__(self, params):
        self.params = list(params)
        self.steps = 0

    def step(self):
        # As torch's profile_hook_step: the step, then the post-hooks.
        self.steps += 1
        from .. import cuda

        cuda._launch("fake_sgd_update_kernel")
        for hook in list(_global_optimizer_post_hooks.values()):
            hook(self, (), {})

    def zero_grad(self):
        pass


class SGD(Optimizer):
    pass
