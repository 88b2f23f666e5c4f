from .modules.module import Module  # noqa: F401
from .modules import Linear, Sequential  # noqa: F401
from . import modules  # noqa: F401
