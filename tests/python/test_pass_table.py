"""The optimizer's pass table (src/opt/pass_table.inc) is the one source of the pipeline: its order, each
pass's name, category, DSP alias and summary. The README's pass table must be exactly the rows the .inc
gives (the failure prints them, to paste), and the native module's pipeline must be the .inc's rows in order.
"""
import pathlib
import re

import sdx
from sdx import _sdx
from models import relu_model

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
INC = ROOT / "src" / "opt" / "pass_table.inc"
README = (ROOT / "README.md").read_text()
HEADER = "| order | pass | category | DSP alias | what it rewrites |"

# SDX_PASS(order, name, category, alias, "summary" "continued" ...), a row possibly over several lines.
_ROW = re.compile(r'^SDX_PASS\(\s*(\d+),\s*(\w+),\s*k(\w+),\s*(\w+),((?:\s*"(?:[^"\\]|\\.)*")+)\s*\)', re.M)
_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def table_rows(text: str) -> list:
    """The .inc's rows as dicts; adjacent string literals are joined, as the compiler does."""
    rows = []
    for m in _ROW.finditer(text):
        summary = "".join(_LITERAL.findall(m.group(5)))
        rows.append({"order": int(m.group(1)), "name": m.group(2), "category": m.group(3).upper(),
                     "alias": m.group(4), "summary": summary})
    return rows


def markdown_rows(rows: list) -> list:
    return [f"| {r['order']} | `{r['name']}` | {r['category']} | `{r['alias']}` | {r['summary']} |" for r in rows]


def readme_rows(readme: str) -> list:
    """The rows of the README's pass table (the lines after its header and separator)."""
    lines = readme.splitlines()
    if HEADER not in lines:
        return []
    out = []
    for line in lines[lines.index(HEADER) + 2:]:
        if not line.startswith("|"):
            break
        out.append(line)
    return out


def problems(rows: list, readme: str) -> list:
    want, got = markdown_rows(rows), readme_rows(readme)
    if not got:
        return [f"README.md has no pass table (header {HEADER!r})"]
    found = [f"README row differs from src/opt/pass_table.inc:\n  README: {g}\n  table:  {w}"
             for g, w in zip(got, want) if g != w]
    found += [f"README lacks the row: {w}" for w in want[len(got):]]
    found += [f"README row names no pass of the table: {g}" for g in got[len(want):]]
    if found:
        found.append("the rows, from the table:\n" + "\n".join(want))
    return found


ROWS = table_rows(INC.read_text())


def test_the_inc_parses_to_every_row():
    # One SDX_PASS per row: a row the pattern misses would drop out of the check silently.
    assert len(ROWS) == INC.read_text().count("\nSDX_PASS(") == 29
    assert [r["order"] for r in ROWS] == sorted({r["order"] for r in ROWS})
    assert all(re.fullmatch(r"[a-z_]+", r["name"]) for r in ROWS)


def test_readme_pass_table_matches_the_table():
    found = problems(ROWS, README)
    assert found == [], "\n".join(found)


def test_a_changed_row_fails_the_check():
    renamed = [dict(r, name="fold_everything") if r["name"] == "fold_constants" else r for r in ROWS]
    assert any("fold_everything" in p for p in problems(renamed, README))
    extra = ROWS + [dict(ROWS[-1], order=9999, name="brand_new_pass", alias="BrandNewOptimizations")]
    assert any(p.startswith("README lacks the row") and "brand_new_pass" in p for p in problems(extra, README))
    stale = README.replace("| 1100 | `simplify_where` |", "| 1100 | `SelectWhereOptimizations` |")
    assert stale != README and problems(ROWS, stale)


def test_the_pipeline_is_the_table_in_order():
    assert [(o, n, c) for o, n, c in _sdx.optimizer_passes()] == [(r["order"], r["name"], r["category"]) for r in ROWS]


def test_reports_key_by_name_and_skips_take_either_spelling():
    model = relu_model().SerializeToString()
    rep = sdx.InferenceSession(model).optimization_report()
    assert list(rep["rewrites_per_pass"]) == [r["name"] for r in ROWS]
    for spelling in ("fuse_attention", "AttentionFusionOptimizations"):
        so = sdx.SessionOptions()
        so.optimizer_skip = [spelling]
        rep = sdx.InferenceSession(model, so).optimization_report()
        assert rep["skipped"] == ["fuse_attention"] and "fuse_attention" not in rep["rewrites_per_pass"]
