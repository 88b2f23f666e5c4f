"""Finds and loads libscalescope (capi/scalescope.h) with ctypes.

Where the library is looked for, first found wins:
  1. $SCALESCOPE_LIBRARY (a path to libscalescope.so);
  2. libscalescope.so beside this file (a copied package);
  3. build/capi/libscalescope.so of the checkout this package sits in
     (python/scalescope -> ../../build/capi), what scripts/setup.sh builds.
"""

import ctypes
import os
from pathlib import Path

ABI_VERSION = 1


class ScalescopeError(Exception):
    """A scalescope failure; str(e) is the CLI's one-line message."""


class ss_column(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("data", ctypes.c_void_p),
        ("length", ctypes.c_int64),
        ("dtype", ctypes.c_int32),
        ("kind", ctypes.c_int32),
        ("categories", ctypes.c_char_p),
    ]


# enum ss_dtype -> numpy type string (little endian: x86-64 and arm64)
DTYPES = {1: "<i8", 2: "<i4", 3: "<u4", 4: "<u8", 5: "|u1", 6: "<f8"}
PLAIN, STRING, ENUM, BOOL = 0, 1, 2, 3


def _candidates():
    env = os.environ.get("SCALESCOPE_LIBRARY")
    if env:
        return [Path(env)]
    here = Path(__file__).resolve().parent
    return [here / "libscalescope.so", here.parent.parent / "build" / "capi" / "libscalescope.so"]


def _load():
    tried = _candidates()
    for path in tried:
        if path.is_file():
            try:
                lib = ctypes.CDLL(str(path))
            except OSError as e:
                raise ImportError(f"scalescope: cannot load {path}: {e}") from None
            break
    else:
        raise ImportError(
            "scalescope: libscalescope.so not found (looked at "
            + ", ".join(str(p) for p in tried)
            + "); build it (scripts/build.sh release) or set SCALESCOPE_LIBRARY to its path"
        )
    if lib.ss_abi_version() != ABI_VERSION:
        raise ImportError(
            f"scalescope: {path} has C ABI {lib.ss_abi_version()}, this package needs {ABI_VERSION}; "
            "rebuild the library or use the package of the same checkout"
        )
    c = ctypes
    sigs = {
        "ss_version": (c.c_char_p, []),
        "ss_last_error": (c.c_char_p, []),
        "ss_free": (None, [c.c_void_p]),
        "ss_open": (c.c_void_p, [c.c_char_p]),
        "ss_close": (None, [c.c_void_p]),
        "ss_rank_count": (c.c_int, [c.c_void_p]),
        "ss_run_info_json": (c.c_void_p, [c.c_void_p]),
        "ss_table_names": (c.c_char_p, []),
        "ss_rank_table": (c.c_int, [c.c_void_p, c.c_int, c.c_char_p, c.POINTER(ss_column), c.c_int]),
        "ss_rank_strings": (
            c.c_int,
            [c.c_void_p, c.c_int, c.POINTER(c.c_void_p), c.POINTER(c.POINTER(c.c_int64)), c.POINTER(c.c_int64)],
        ),
        "ss_analyze_json": (c.c_void_p, [c.c_void_p, c.c_char_p, c.c_char_p, c.c_char_p, c.c_char_p]),
        "ss_analyze_tables_json": (c.c_void_p, [c.c_void_p, c.c_char_p]),
        "ss_diff_json": (c.c_void_p, [c.c_void_p, c.c_void_p, c.c_char_p]),
        "ss_stats_json": (c.c_void_p, [c.c_void_p, c.c_char_p]),
        "ss_sweep_json": (c.c_void_p, [c.c_char_p, c.c_char_p]),
        "ss_mlperf_json": (c.c_void_p, [c.c_char_p, c.c_char_p]),
        "ss_report": (c.c_void_p, [c.c_char_p, c.c_char_p, c.c_char_p]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    lib.path = str(path)
    return lib


lib = _load()


def error():
    """The calling thread's last library error as an exception."""
    return ScalescopeError(lib.ss_last_error().decode("utf-8", "replace") or "unknown error")


def _no_nul(value, raw):
    """raw, or ValueError when it holds a NUL: the C string would end there,
    and the library would read or write another file than the one named."""
    if ("\0" if isinstance(raw, str) else b"\0") in raw:
        raise ValueError(f"scalescope: {value!r} holds a NUL character; a path or option cannot")
    return raw


def encode(text):
    """str / PathLike / None -> bytes or None for a const char* argument;
    ValueError when it holds a NUL."""
    if text is None:
        return None
    raw = os.fsencode(text) if isinstance(text, (os.PathLike, bytes)) else str(text).encode("utf-8")
    return _no_nul(text, raw)


def path(p):
    """A path (str, bytes or PathLike) as the str that goes into a JSON
    argument; ValueError when it holds a NUL."""
    return _no_nul(p, os.fsdecode(os.fspath(p)))


def take_text(ptr):
    """Decodes and frees a char* the library returned; raises its error on NULL.
    The text is decoded straight from the library's buffer (one copy, not a
    bytes copy and then a str copy: the analysis JSON is the largest thing
    handed over)."""
    if not ptr:
        raise error()
    try:
        n = libc_strlen(ptr)
        return str(memoryview((ctypes.c_char * n).from_address(ptr)).cast("B"), "utf-8", "replace")
    finally:
        lib.ss_free(ptr)


libc_strlen = ctypes.CDLL(None).strlen
libc_strlen.restype = ctypes.c_size_t
libc_strlen.argtypes = [ctypes.c_void_p]
