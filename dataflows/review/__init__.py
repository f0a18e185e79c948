"""Review-finding recall: multi-signal retrieval query, language classification, language re-rank."""
