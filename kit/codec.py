"""Values as JSON, both ways, for what crosses a sandbox's wall: never pickle, never code.

`encode` turns a value into JSON-ready data: None, bools, ints, floats, strings, lists, tuples, dicts,
sets, numpy arrays and scalars, pandas frames and series, paths, and the package's own dataclasses and
named tuples (rebuilt by class name, from `ragcourse.*` only). A function becomes a marker (the grader
runs it elsewhere); anything else becomes a marker saying what it was. `decode` rebuilds plain values
and nothing that runs code a student wrote. This file holds no secret: it runs inside the sandbox too.

>>> decode(encode({"a": (1, 2.5), 3: [None, "x"]}))
{'a': (1, 2.5), 3: [None, 'x']}
"""

from __future__ import annotations

import dataclasses
import json
import math

MAX_DEPTH = 40
MAX_ARRAY_BYTES = 512 << 20  # an array decoded from a few bytes of JSON ("<U100000000" x 30) must not take 12 GB
MAX_DECODED = 1 << 30  # bytes (estimated) of everything one `decode` builds, however it is nested
MAX_NODES = 5_000_000  # values one `decode` builds
TAG = "$t"


class Budget:
    """What one `decode` may still build: values and (estimated) bytes; ValueError past either."""

    def __init__(self, nodes: int = MAX_NODES, size: int = MAX_DECODED):
        self.nodes, self.size = nodes, size

    def take(self, nodes: int, size: int) -> None:
        self.nodes -= nodes
        self.size -= size
        if self.nodes < 0 or self.size < 0:
            raise ValueError(f"the data decodes to more than {MAX_NODES:,} values or {MAX_DECODED >> 20} MB")


class Unsupported(ValueError):
    """A value the codec cannot carry (its type is named, never its content)."""


def encode(value, depth: int = 0):
    """JSON-ready data for `value` (see the module docstring); Unsupported for anything else."""
    if depth > MAX_DEPTH:
        raise Unsupported("nested too deeply")
    if value is None or isinstance(value, bool):
        return bool(value) if value is not None else None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, str):
        return str.__str__(value)
    if _namedtuple(value):
        return _object(value, depth)
    if isinstance(value, list | tuple | set | frozenset):
        items = [encode(v, depth + 1) for v in value]
        if isinstance(value, list):
            return items
        kind = "tuple" if isinstance(value, tuple) else "frozenset" if isinstance(value, frozenset) else "set"
        return {TAG: kind, "v": items}
    if isinstance(value, dict):
        return {TAG: "dict", "v": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    return _other(value, depth)


def _float(x: float):
    return x if math.isfinite(x) else {TAG: "float", "v": repr(x)}


def _namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _other(value, depth: int):
    kind = type(value)
    module = kind.__module__ or ""
    if module == "numpy" or module.startswith("numpy."):
        return _numpy(value, depth)
    if module == "pandas" or module.startswith("pandas."):
        return _pandas(value, depth)
    if module.startswith("pathlib"):
        return {TAG: "path", "v": str(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _object(value, depth)
    if callable(value) and (module == "builtins" or hasattr(value, "__code__") or isinstance(value, type)):
        return {TAG: "function"}
    if module == "re" and kind.__name__ == "Pattern":
        return {TAG: "unsupported", "type": "re.Pattern"}
    raise Unsupported(f"a {module}.{kind.__qualname__} cannot be carried as data")


def _numpy(value, depth: int):
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufUS":
            raise Unsupported(f"a numpy array of dtype {value.dtype}")
        return {TAG: "ndarray", "dtype": value.dtype.str, "shape": list(value.shape),
                "v": [encode(x, depth + 1) for x in value.ravel().tolist()]}
    if isinstance(value, np.generic) and value.dtype.kind in "biufUS":
        return {TAG: "npscalar", "dtype": value.dtype.str, "v": encode(value.item(), depth + 1)}
    raise Unsupported(f"a numpy {type(value).__name__}")


def _pandas(value, depth: int):
    import pandas as pd

    if isinstance(value, pd.DataFrame):
        return {TAG: "frame", "columns": encode(list(value.columns), depth + 1),
                "index": encode(list(value.index), depth + 1), "dtypes": [str(d) for d in value.dtypes],
                "v": [encode(list(row), depth + 1) for row in value.itertuples(index=False, name=None)]}
    if isinstance(value, pd.Series):
        return {TAG: "series", "name": encode(value.name, depth + 1), "dtype": str(value.dtype),
                "index": encode(list(value.index), depth + 1), "v": encode(list(value), depth + 1)}
    if value is pd.NA:
        return {TAG: "NA"}
    if isinstance(value, pd.Timestamp):
        return {TAG: "unsupported", "type": "pandas.Timestamp"}
    raise Unsupported(f"a pandas {type(value).__name__}")


def _object(value, depth: int):
    kind = type(value)
    if not (kind.__module__ or "").startswith("ragcourse."):
        if _namedtuple(value):
            return {TAG: "tuple", "v": [encode(v, depth + 1) for v in value]}
        raise Unsupported(f"a {kind.__module__}.{kind.__qualname__} (only the package's own records are carried)")
    if _namedtuple(value):
        fields = dict(zip(kind._fields, value, strict=True))
    else:
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
    return {TAG: "obj", "class": f"{kind.__module__}:{kind.__qualname__}",
            "v": {name: encode(v, depth + 1) for name, v in fields.items()}}


def decode(data, depth: int = 0, budget: Budget | None = None):
    """The value `encode` described, rebuilt from plain data (markers become `Marker`s), within a `Budget`.

    >>> decode({"$t": "ndarray", "dtype": "<U100000", "shape": [2], "v": [["", ""], ["", ""]]})
    Traceback (most recent call last):
    ValueError: an array's items must be numbers or strings
    """
    budget = budget if budget is not None else Budget()
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    budget.take(1, 16 + (len(data) if isinstance(data, str) else 0))
    if data is None or isinstance(data, bool | int | float | str):
        return data
    if isinstance(data, list):
        return [decode(x, depth + 1, budget) for x in data]
    if not isinstance(data, dict) or not isinstance(data.get(TAG), str):
        raise ValueError("not a value the codec wrote")
    return _DECODERS.get(data[TAG], _bad)(data, depth + 1, budget)


@dataclasses.dataclass(frozen=True)
class Marker:
    """Where a value could not travel as data: a function (run elsewhere) or an unsupported type."""

    kind: str
    type: str = ""


def _bad(data, depth, budget):
    raise ValueError(f"unknown tag {str(data.get(TAG))[:40]!r}")


def _items(data, depth, budget):
    items = data.get("v")
    if not isinstance(items, list):
        raise ValueError("a container without items")
    return [decode(x, depth, budget) for x in items]


def _dict(data, depth, budget):
    pairs = data.get("v")
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise ValueError("a dict that is not a list of pairs")
    return {_hashable(decode(k, depth, budget)): decode(v, depth, budget) for k, v in pairs}


def _hashable(key):
    if isinstance(key, list):
        return tuple(_hashable(k) for k in key)
    hash(key)
    return key


def _ndarray(data, depth, budget):
    import numpy as np

    dtype = np.dtype(str(data.get("dtype")))
    if dtype.kind not in "biufUS":
        raise ValueError(f"array dtype {dtype}")
    shape = tuple(int(n) for n in data.get("shape", []))
    items = _items(data, depth, budget)
    if any(isinstance(x, list | tuple | dict) for x in items):  # nested lists would make more elements than rows
        raise ValueError("an array's items must be numbers or strings")
    if any(n < 0 for n in shape) or math.prod(shape) != len(items):
        raise ValueError("an array whose shape does not match its items")
    if dtype.itemsize * max(1, len(items)) > MAX_ARRAY_BYTES:
        raise ValueError(f"an array of {len(items)} x {dtype.itemsize} bytes: over {MAX_ARRAY_BYTES >> 20} MB")
    budget.take(0, dtype.itemsize * len(items))
    return np.array(items, dtype=dtype).reshape(shape)


def _npscalar(data, depth, budget):
    import numpy as np

    dtype = np.dtype(str(data.get("dtype")))
    if dtype.kind not in "biufUS":
        raise ValueError(f"scalar dtype {dtype}")
    budget.take(0, dtype.itemsize)
    value = decode(data.get("v"), depth, budget)
    if not isinstance(value, bool | int | float | str):
        raise ValueError("a numpy scalar that is not a number or a string")
    return dtype.type(value)


def _as_type(column, name):
    """`column` as the dtype the data names, unless that dtype is unknown or could take more memory than the
    data (a numpy dtype of more than 64 bytes an item: "|S100000000" is 100 MB a row): then as it is.

    >>> column = _series({"v": [1, 2], "index": [0, 1], "dtype": "|S100000000"}, 0, Budget())
    >>> _as_type(column, "|S100000000").dtype.itemsize
    8
    """
    import numpy as np
    import pandas as pd

    try:
        dtype = pd.api.types.pandas_dtype(str(name))
        return column if isinstance(dtype, np.dtype) and dtype.itemsize > 64 else column.astype(dtype)
    except (TypeError, ValueError):
        return column


def _frame(data, depth, budget):
    import pandas as pd

    rows = [decode(r, depth, budget) for r in _list(data.get("v", []))]
    columns, index = decode(data.get("columns"), depth, budget), decode(data.get("index"), depth, budget)
    # a row per index entry, a value per column: an empty frame of 100,000 x 100,000 would be 80 GB of NaN
    if not (isinstance(columns, list) and isinstance(index, list) and len(index) == len(rows)
            and all(isinstance(r, list) and len(r) == len(columns) for r in rows)):
        raise ValueError("a frame whose rows do not match its index and columns")
    budget.take(0, 72 * len(rows) * max(1, len(columns)))  # a cell, its object and its converted copy
    frame = pd.DataFrame(rows, columns=columns, index=index)
    for column, dtype in zip(frame.columns, _list(data.get("dtypes", [])), strict=False):
        frame[column] = _as_type(frame[column], dtype)
    return frame


def _series(data, depth, budget):
    import pandas as pd

    values, index = decode(data.get("v"), depth, budget), decode(data.get("index"), depth, budget)
    if not (isinstance(values, list) and isinstance(index, list) and len(values) == len(index)):
        raise ValueError("a series whose values do not match its index")
    budget.take(0, 72 * len(values))
    series = pd.Series(values, index=index, name=decode(data.get("name"), depth, budget))
    return _as_type(series, data.get("dtype"))


def _list(value) -> list:
    if not isinstance(value, list):
        raise ValueError("expected a list")
    return value


def _object_back(data, depth, budget):
    name = str(data.get("class", ""))
    kind = RECORDS.get(name) or _record(name)
    fields = data.get("v")
    if not isinstance(fields, dict):
        raise ValueError("a record without fields")
    return kind(**{str(k): decode(v, depth, budget) for k, v in fields.items()})


#: Records rebuilt by name: filled on first use from the package's modules already imported (never by
#: importing a module the data names), so a name like "ragcourse.cli.__main__:main" runs nothing.
RECORDS: dict[str, type] = {}
#: Inside a sandbox only (kit/runner.py sets it): the package's module a record names may be imported there,
#: where the data comes from the grader's checks and nothing runs with the grader's rights.
IMPORT_RECORDS = False


def _record(name: str) -> type:
    """The package's record class `name` ("module:Class"), from a module already imported; ValueError else."""
    import sys

    module_name, _, qualname = name.partition(":")
    module = sys.modules.get(module_name) if module_name.startswith("ragcourse.") else None
    if module is None and IMPORT_RECORDS and module_name.startswith("ragcourse.") and "__main__" not in module_name:
        import importlib

        module = importlib.import_module(module_name)
    kind = getattr(module, qualname, None) if module is not None and qualname.isidentifier() else None
    if not (isinstance(kind, type) and kind.__module__ == module_name
            and (dataclasses.is_dataclass(kind) or issubclass(kind, tuple) and hasattr(kind, "_fields"))):
        raise ValueError(f"class {name[:80]!r} is not one of the package's records")
    RECORDS[name] = kind
    return kind


def _na(data, depth, budget):
    import pandas as pd

    return pd.NA


def _path(data, depth, budget):
    from pathlib import Path

    return Path(str(data.get("v")))


_DECODERS = {
    "tuple": lambda d, depth, budget: tuple(_items(d, depth, budget)),
    "set": lambda d, depth, budget: {_hashable(x) for x in _items(d, depth, budget)},
    "frozenset": lambda d, depth, budget: frozenset(_hashable(x) for x in _items(d, depth, budget)),
    "dict": _dict, "ndarray": _ndarray, "npscalar": _npscalar, "frame": _frame, "series": _series,
    "obj": _object_back, "NA": _na, "path": _path,
    "float": lambda d, depth, budget: float({"nan": "nan", "inf": "inf", "-inf": "-inf"}[str(d.get("v"))]),
    "function": lambda d, depth, budget: Marker("function"),
    "unsupported": lambda d, depth, budget: Marker("unsupported", str(d.get("type", ""))[:80]),
}


def dumps(value) -> str:
    """`encode` then JSON text (NaN and infinities never appear bare)."""
    return json.dumps(encode(value), allow_nan=False)


def loads(text: str):
    """JSON text (bare NaN or Infinity refused) then `decode`."""
    return decode(json.loads(text, parse_constant=_refuse))


def _refuse(name):
    raise ValueError(f"bare {name} in JSON")
