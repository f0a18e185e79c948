"""The "Edited since the index" section `get_context` opens with while `cra serve --watch` re-indexes: each changed
file as a diff from the KB's text to the file now, hunks named by the function they are in, ranked files first,
within its share of the budget."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from cra.drivers.common.tokens import count_tokens
from cra.drivers.index.indexer import index_repository
from cra.drivers.kb.store import load_kb
from cra.drivers.retrieval.retriever import retrieve
from cra.drivers.serve import edits_section as edits_section_module
from cra.drivers.serve.edited import edited_files
from cra.drivers.serve.edits_section import EDITS_BUDGET, edits_section
from tests.fixture_repo import make_repo

TASK = "invoice total amount with a discount"


def _indexed(tmp_path):
    repo = make_repo(tmp_path / "demo", git=False)
    index_repository(repo, repo / ".cra", history=0)
    return repo, load_kb(repo / ".cra")


def test_each_changed_file_is_shown_as_it_is_now_against_the_kbs_text(tmp_path):
    repo, kb = _indexed(tmp_path)
    invoice = repo / "app" / "billing" / "invoice.py"
    invoice.write_text(
        invoice.read_text().replace(
            "        return sum(price for _, price in self.items)\n",
            "        total = sum(price for _, price in self.items)\n        return total * (1 - self.discount)\n",
        )
    )
    (repo / "app" / "billing" / "discount.py").write_text("def discount_rate(customer):\n    return 0.1\n")
    (repo / "app" / "utils.py").unlink()
    (repo / "app" / "broken.py").write_text((repo / "app" / "broken.py").read_text())  # touched, not changed
    (repo / "app" / "auth" / "types.py").write_bytes(b"\0binary now")
    (repo / "app" / "blob.py").write_bytes(b"\0never indexed")
    paths = ["app/billing/invoice.py", "app/billing/discount.py", "app/utils.py", "app/broken.py"]
    paths += ["app/auth/types.py", "app/blob.py"]
    edited = edited_files(repo, paths)
    scope = retrieve(kb, TASK).scope
    section = edits_section(edited, kb, scope, 8_000, count_tokens)

    text = section.markdown
    assert text.startswith("## Edited since the index\n")
    rank = int(scope.set_index("path")["rank"]["app/billing/invoice.py"])
    assert (
        f"### `app/billing/invoice.py`: edited (ranked #{rank}: any code of it below is from before the edit)" in text
    )
    # the hunk names the method the change is in, with the line numbers of the file now
    assert "@@ -6,7 +6,8 @@ Invoice.total_amount" in text
    assert "-        return sum(price for _, price in self.items)" in text
    assert "+        return total * (1 - self.discount)" in text
    assert "### `app/billing/discount.py`: new file" in text and "+def discount_rate(customer):" in text
    assert "### `app/utils.py`: deleted" in text
    assert "app/broken.py" not in text  # the same text as the KB's
    assert "### `app/auth/types.py`: changed, not shown (binary, too large or not UTF-8 now)" in text
    assert "app/blob.py" not in text  # neither in the KB nor readable: nothing to show
    changes = {f["path"]: f["change"] for f in section.provenance["files"]}
    assert changes == {
        "app/billing/invoice.py": "modified",
        "app/billing/discount.py": "added",
        "app/auth/types.py": "unreadable",
        "app/utils.py": "deleted",
    }
    assert next(iter(changes)) == "app/billing/invoice.py"  # ranked first, the others after by path

    # nothing changed against the KB: no section
    invoice.write_text(
        kb.contents.set_index("file_id")["text"][kb.files.set_index("path")["file_id"]["app/billing/invoice.py"]]
    )
    assert edits_section(edited_files(repo, ["app/billing/invoice.py"]), kb, scope, 8_000, count_tokens).markdown == ""


def test_the_section_keeps_to_its_share_of_the_budget(tmp_path):
    repo, kb = _indexed(tmp_path)
    body = "".join(f"def generated_step_{i}(value):\n    return value + {i}\n\n" for i in range(400))
    (repo / "app" / "steps.py").write_text(body)
    (repo / "app" / "zz_more.py").write_text(body)
    edited = edited_files(repo, ["app/steps.py", "app/zz_more.py"])
    empty = pd.DataFrame({"path": [], "rank": []})
    for budget in (2_000, 40_000):
        section = edits_section(edited, kb, empty, budget, count_tokens)
        limit = min(EDITS_BUDGET, budget // 4)
        assert count_tokens(section.markdown) <= limit
        assert "more lines of this diff not shown: read the file" in section.markdown
        assert section.provenance["not_shown"] == ["app/zz_more.py"]
        assert section.markdown.endswith(
            f"Also changed, not shown (over this section's {limit} tokens): `app/zz_more.py`."
        )


def _applied(a: list[str], diff: list[str]) -> list[str]:
    """A unified diff's hunks applied to the lines it was made from."""
    out, at = [], 0
    for line in diff[2:]:
        if line.startswith("@@"):
            start = int(line.split()[1][1:].split(",")[0])
            start = start - 1 if start else 0
            out += a[at:start]
            at = start
        elif line[:1] in (" ", "-"):
            assert a[at] == line[1:]
            at += 1
            out += [line[1:]] if line[0] == " " else []
        else:
            out.append(line[1:])
    return out + a[at:]


@pytest.mark.parametrize("diffed", [2_000, 5])
def test_a_diff_applied_to_the_kbs_text_gives_the_file_now(monkeypatch, diffed):
    """difflib's hunks, and the one hunk shown when more lines than MAX_DIFFED_LINES changed."""
    monkeypatch.setattr(edits_section_module, "MAX_DIFFED_LINES", diffed)
    rng = random.Random(diffed)
    for _ in range(60):
        a = [f"line {rng.randrange(30)}" for _ in range(rng.randrange(0, 40))]
        b = list(a)
        for _ in range(rng.randrange(1, 6)):
            at = rng.randrange(len(b) + 1)
            if rng.random() < 0.5 and at < len(b):
                del b[at : at + rng.randrange(1, 4)]
            else:
                b[at:at] = [f"new {rng.randrange(99)}" for _ in range(rng.randrange(1, 4))]
        diff = edits_section_module._diff(a, b, "x (indexed)", "x (now)")
        assert _applied(a, diff) == b if a != b else diff == []


def test_a_hunk_of_added_code_is_named_by_what_it_adds(tmp_path):
    repo, kb = _indexed(tmp_path)
    invoice = repo / "app" / "billing" / "invoice.py"
    invoice.write_text(invoice.read_text() + "\n\ndef invoice_discount(invoice, rate):\n    return rate\n")
    scope = pd.DataFrame({"path": [], "rank": []})
    text = edits_section(edited_files(repo, ["app/billing/invoice.py"]), kb, scope, 8_000, count_tokens).markdown
    hunk = next(line for line in text.splitlines() if line.startswith("@@"))
    assert hunk.endswith("@@ invoice_discount"), hunk
