class ProcessGroup:
    def __init__(self, backend, ranks, desc):
        self.backend = backend
        self.ranks = ranks
        self.group_desc = desc


class _World:
    def __init__(self):
        self.default = None
        self.pg_names = {}
        self.pg_group_ranks = {}
        self.rank = -1


_world = _World()


def is_available():
    return True


def is_initialized():
    return _world.default is not None


def init_process_group(backend="nccl", rank=0, world_size=1):
    pg = ProcessGroup(backend, list(range(world_size)), "default_pg")
    _world.default = pg
    _world.rank = rank
    _world.pg_names[pg] = "0"
    _world.pg_group_ranks[pg] = {r: r for r in range(world_size)}


def new_group(ranks, backend=None, group_desc=None):
    pg = ProcessGroup(backend or _world.default.backend, list(ranks), group_desc or "undefined")
    _world.pg_names[pg] = str(len(_world.pg_names))
    _world.pg_group_ranks[pg] = {r: i for i, r in enumerate(ranks)}
    return pg


def get_rank(group=None):
    return _world.rank


def get_world_size(group=None):
    return len(_world.default.ranks)


def get_backend(group=None):
    return (group or _world.default).backend
