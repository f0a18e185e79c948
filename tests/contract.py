"""The `--format json` contract, checked on every test retrieval: names other tools depend on."""

TASK_KEYS = {"raw_description", "task_type", "keywords", "file_hints", "symbol_hints", "error_patterns", "concepts"}
FILE_KEYS = {
    "path",
    "language",
    "relevance_rank",
    "score",
    "added_by",
    "seed_reason",
    "symbols",
    "rationale_comments",
    "test_assertions",
}
SYMBOL_KEYS = {
    "name",
    "qualified_name",
    "kind",
    "relevance",
    "signature",
    "body",
    "docstring",
    "start_line",
    "end_line",
    "tokens",
}
SCOPE_KEYS = {"path", "rank", "total_score", "seed", "seed_reason", "added_by", "signals"}
SIGNALS = {
    "path_match",
    "symbol_match",
    "dependency_proximity",
    "cochange_affinity",
    "recency",
    "domain_match",
    "concept_overlap",
    "structural_centrality",
    "lexical_match",
    "symbol_lexical_match",
    "history_match",
    "title_match",
    "partner_affinity",
}


def assert_json_contract(doc: dict) -> None:
    """Fail with a precise message when a retrieval JSON document breaks the contract."""
    assert set(doc) >= {"task", "files", "dependency_edges", "token_count", "budget", "provenance"}, set(doc)
    assert set(doc["task"]) >= TASK_KEYS, set(doc["task"])
    assert doc["task"]["task_type"] in {"bug_fix", "feature", "refactor", "test", "investigation"}
    assert isinstance(doc["token_count"], int) and isinstance(doc["budget"], int)
    assert doc["token_count"] <= doc["budget"]
    paths = set()
    for f in doc["files"]:
        assert set(f) >= FILE_KEYS, set(f)
        assert f["added_by"] in {"seed", "score", "deps", "cochange"}
        assert isinstance(f["seed_reason"], str)
        assert f["test_assertions"] is None or isinstance(f["test_assertions"], list)
        for s in f["symbols"]:
            assert set(s) >= SYMBOL_KEYS, set(s)
            assert s["relevance"] in {"primary", "supporting", "type_context", "outline"}
        paths.add(f["path"])
    for edge in doc["dependency_edges"]:
        assert len(edge) == 2 and edge[0] in paths and edge[1] in paths, edge
    prov = doc["provenance"]
    assert set(prov) >= {"scope", "weights", "budget", "warnings"}, set(prov)
    assert set(prov["budget"]) >= {"before", "after", "evicted", "demoted"}
    assert set(prov["weights"]) == SIGNALS
    ranks = [row["rank"] for row in prov["scope"]]
    assert ranks == sorted(ranks)
    for row in prov["scope"]:
        assert set(row) >= SCOPE_KEYS and set(row["signals"]) == SIGNALS, row
        assert bool(row["seed_reason"]) == row["seed"], row  # every seed says what named it, nothing else does
