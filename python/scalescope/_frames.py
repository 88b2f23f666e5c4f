"""pandas is optional: everything that returns a DataFrame goes through here."""


def pandas(what):
    """The pandas module, or an ImportError saying what needed it."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(
            f"scalescope: {what} returns a pandas DataFrame and pandas is not installed "
            "(apt-get install python3-pandas, or pip install pandas); "
            "the numpy forms (Rank.columns, Analysis.json) work without it"
        ) from None
    return pd


def records(rows, columns, what):
    """A DataFrame from a list of dicts, with these columns in this order even when empty."""
    pd = pandas(what)
    return pd.DataFrame.from_records(rows, columns=columns) if rows else pd.DataFrame(columns=columns)


def unwrap(ts):
    """The list of tables of a command's JSON: {"schema_version", "command", "tables": [...]},
    or a bare list or table (one table of ingest's JSON)."""
    if isinstance(ts, dict) and "tables" in ts:
        return ts["tables"]
    return ts if isinstance(ts, list) else [ts]


def table(t, what):
    """A DataFrame from one report table's JSON ({"title", "columns", "rows", "notes"});
    title and notes go to df.attrs. A command's JSON holding one table is unwrapped."""
    if isinstance(t, dict) and "tables" in t and len(t["tables"]) == 1:
        t = t["tables"][0]
    df = records(t.get("rows", []), t.get("columns", []), what)
    df.attrs["title"] = t.get("title", "")
    df.attrs["notes"] = list(t.get("notes", []))
    return df


def tables(ts, what):
    """{id: DataFrame} of report tables, in order (the id is the table's
    name in CSV and JSON, e.g. "top_kernels_all_ranks"; the title is in df.attrs)."""
    return {t["id"]: table(t, what) for t in unwrap(ts)}
