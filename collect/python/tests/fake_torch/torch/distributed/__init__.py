from . import distributed_c10d  # noqa: F401
from .distributed_c10d import (  # noqa: F401
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_initialized,
    new_group,
)
