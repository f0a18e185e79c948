"""cra.drivers.research.tune_languages: per-language rows, the shipped profile with and without its second-pass signals."""

from __future__ import annotations

import pandas as pd

from cra.dataflows.retrieval.signal_list import SIGNALS
from cra.drivers.research.tune_languages import family_comparison


def test_the_shipped_profile_rows_differ_by_the_second_pass_signals_only():
    rows = []
    for language in ("go", "rust"):
        for c in range(3):
            for f in range(2):  # the gold file (0) matches the words less, but is the best match's partner
                values = dict.fromkeys(SIGNALS, 0.0)
                values["lexical_match"] = 0.5 if f == 0 else 0.6
                values["partner_affinity"] = 1.0 if f == 0 else 0.0
                rows.append(
                    {
                        "path": f"f{f}",
                        **values,
                        "seed": False,
                        "is_test": False,
                        "non_source": False,
                        "case_id": f"{language}-{c}",
                        "repo": f"{language}/r",
                        "gold": f == 0,
                        "language": language,
                    }
                )
    profile = {"weights": {"lexical_match": 1.0, "partner_affinity": 0.5}, "priors": {}}
    table = family_comparison(pd.DataFrame(rows), profile, fits=())
    for language in ("go", "rust"):
        assert table.loc[(language, "shipped profile"), "acc@1"] == 1.0
        assert table.loc[(language, "shipped profile, first pass only"), "acc@1"] == 0.0
        assert table.loc[(language, "BM25 alone"), "acc@1"] == 0.0
    assert not any("LORO" in name for name in table.index.get_level_values("configuration"))
