"""Review-finding recall (seed 002): multi-signal retrieval query, language classification, language re-rank."""
