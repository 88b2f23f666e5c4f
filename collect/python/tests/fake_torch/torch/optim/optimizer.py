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
        # As torch's profile_hook_step: the step, then the post-hooks, all
        # inside the record_function range "Optimizer.step#<class>.step".
        # torch's NVTX observer warns (and leaves its range open) when that
        # range closes under another profiler state than it opened with.
        self.steps += 1
        import sys

        from .. import cuda
        from ..autograd import profiler

        opened_with = profiler._nvtx_profiler_on
        cuda._launch("fake_sgd_update_kernel")
        for hook in list(_global_optimizer_post_hooks.values()):
            hook(self, (), {})
        if profiler._nvtx_profiler_on != opened_with:
            name = "Optimizer.step#%s.step" % type(self).__name__
            sys.stderr.write("[W] Exception in RecordFunction callback: state_ptr INTERNAL ASSERT FAILED at "
                             "nvtx_observer.cpp:117, Expected profiler state set, for the range %s\n" % name)

    def zero_grad(self):
        pass


class SGD(Optimizer):
    pass
