from .module import Linear, Module, Sequential  # noqa: F401
from . import module  # noqa: F401
