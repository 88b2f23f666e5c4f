from .optimizer import SGD, Optimizer  # noqa: F401
from . import optimizer  # noqa: F401
