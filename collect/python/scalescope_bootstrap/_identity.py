"""Rank, local rank, world size and process groups from torch.distributed.

Read, never wrapped: the job's torch.distributed functions stay its own.
The bootstrap reads the state at the first step mark, whenever a window
opens and at exit (a group destroyed before exit is still kept from the
earlier reads). Process groups come with their name, description where
torch has one (2.4+: "default_pg", or the name given to new_group), the
global ranks in them and the backend. The environment's RANK/LOCAL_RANK
remain the collector's fallback when torch.distributed is not used.
"""

import os

MAX_GROUPS = 256


def snapshot(torch, record):
    try:
        dist = getattr(torch, "distributed", None)
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return
        ident = {
            "source": "torch.distributed",
            "rank": int(dist.get_rank()),
            "world_size": int(dist.get_world_size()),
            "backend": str(dist.get_backend()),
        }
        local_rank = None
        if hasattr(dist, "get_node_local_rank"):
            try:
                local_rank = int(dist.get_node_local_rank())
            except Exception:
                local_rank = None
        if local_rank is None and os.environ.get("LOCAL_RANK", "").isdigit():
            local_rank = int(os.environ["LOCAL_RANK"])
        ident["local_rank"] = -1 if local_rank is None else local_rank
        groups = _groups(dist)
        old = record.data.get("distributed") or {}
        seen = {g["name"]: g for g in old.get("process_groups", [])}
        for g in groups:
            seen[g["name"]] = g
        ident["process_groups"] = sorted(seen.values(), key=lambda g: g["name"])[:MAX_GROUPS]
        record.set("distributed", ident)
        record.hook("process_groups", "read")
    except Exception as e:
        record.error("torch.distributed", e)
        record.hook("process_groups", "failed: %s" % type(e).__name__)


def _groups(dist):
    c10d = getattr(dist, "distributed_c10d", None)
    world = getattr(c10d, "_world", None)
    names = getattr(world, "pg_names", None) or getattr(c10d, "_pg_names", None) or {}
    group_ranks = getattr(world, "pg_group_ranks", None) or getattr(c10d, "_pg_group_ranks", None) or {}
    out = []
    for pg, name in list(names.items()):
        ranks = group_ranks.get(pg, {})
        g = {"name": str(name), "ranks": sorted(int(r) for r in ranks.keys())}
        desc = getattr(pg, "group_desc", None)
        if isinstance(desc, str) and desc:
            g["description"] = desc
        try:
            g["backend"] = str(dist.get_backend(pg))
        except Exception:
            pass
        out.append(g)
    return out
