"""Operator and module ranges, on only while a window is open.

Operators: torch's NVTX profiler (what torch.autograd.profiler.emit_nvtx
turns on): one NVTX range per operator, "aten::conv2d, seq = 12", backward
operators carrying their forward's sequence number, which `analyze` uses
to charge backward work to the forward module. Turning it on and off
synchronizes the GPU once each (emit_nvtx does): once per window.

Modules: global forward pre- and post-hooks push and pop an NVTX range
"nn.Module: NAME", NAME the module's qualified name under the outermost
module called ("features.3.conv.0"; the outermost is named by its class).

Module ranges are switched at step marks, so a window's ranges cover its
steps whole. Operator ranges are switched at the next call of the outermost
module after the mark (a one-shot forward pre-hook): the step hook runs
inside the optimizer's own record_function range, and torch's NVTX observer
asserts, printing a warning into the job's output, when a range closes under
another profiler state than it opened with. A failure turns that kind of
range off for the rest of the run and is written to the record.
"""

import weakref


class Ranges:
    def __init__(self, torch, record):
        self.torch = torch
        self.record = record
        self.operators = None  # the emit_nvtx object while on
        self.operators_wanted = False
        self.operators_switch = None  # the one-shot forward pre-hook's handle while a switch waits
        self.module_handles = []
        self.operators_failed = False
        self.modules_failed = False
        self.names = weakref.WeakKeyDictionary()  # module -> qualified name
        self.record.hook("operator_ranges", "off")
        self.record.hook("module_ranges", "off")

    def on(self):
        self._switch_operators(True)
        self._modules_on()

    def off(self):
        self._switch_operators(False)
        self._modules_off()

    def _switch_operators(self, wanted):
        self.operators_wanted = wanted
        if self.operators_failed or self.operators_switch is not None:
            return
        try:
            def switch(module, args):
                handle, self.operators_switch = self.operators_switch, None
                if handle is not None:
                    handle.remove()
                if self.operators_wanted:
                    self._operators_on()
                else:
                    self._operators_off()

            self.operators_switch = self.torch.nn.modules.module.register_module_forward_pre_hook(switch)
        except Exception as e:
            self.operators_failed = True
            self.record.error("operator ranges", e)
            self.record.hook("operator_ranges", "failed: %s" % type(e).__name__)

    def _operators_on(self):
        if self.operators_failed or self.operators is not None:
            return
        try:
            ranges = self.torch.autograd.profiler.emit_nvtx(record_shapes=False)
            ranges.__enter__()
            self.operators = ranges
            self.record.hook("operator_ranges", "on in windows")
        except Exception as e:  # e.g. another profiler is on in this thread
            self.operators_failed = True
            self.record.error("operator ranges", e)
            self.record.hook("operator_ranges", "failed: %s" % type(e).__name__)

    def _operators_off(self):
        ranges, self.operators = self.operators, None
        if ranges is None:
            return
        try:
            ranges.__exit__(None, None, None)
        except Exception as e:
            self.operators_failed = True
            self.record.error("operator ranges", e)
            self.record.hook("operator_ranges", "failed: %s" % type(e).__name__)

    def _modules_on(self):
        if self.modules_failed or self.module_handles:
            return
        try:
            modules = self.torch.nn.modules.module
            nvtx = self.torch.cuda.nvtx
            push, pop = nvtx.range_push, nvtx.range_pop
            names = self.names

            def name_of(module):
                name = names.get(module)
                if name is None:
                    # The outermost module called with no name yet: name its tree.
                    root = type(module).__name__
                    for sub_name, sub in module.named_modules():
                        if sub not in names:
                            names[sub] = sub_name or root
                    name = names.get(module, root)
                return name

            def before(module, args):
                try:
                    push("nn.Module: " + name_of(module))
                except Exception as e:
                    self._modules_failed(e)

            def after(module, args, output):
                try:
                    pop()
                except Exception as e:
                    self._modules_failed(e)

            self.module_handles.append(modules.register_module_forward_pre_hook(before))
            try:
                # always_call (torch >= 2.1): the range is popped when forward raises too.
                self.module_handles.append(modules.register_module_forward_hook(after, always_call=True))
            except TypeError:
                self.module_handles.append(modules.register_module_forward_hook(after))
            self.record.hook("module_ranges", "on in windows")
        except Exception as e:
            self._modules_failed(e)

    def _modules_failed(self, e):
        if self.modules_failed:
            return
        self.modules_failed = True
        self.record.error("module ranges", e)
        self.record.hook("module_ranges", "failed: %s" % type(e).__name__)
        self._modules_off()

    def _modules_off(self):
        handles, self.module_handles = self.module_handles, []
        for h in handles:
            try:
                h.remove()
            except Exception as e:
                self.record.error("module ranges", e)
