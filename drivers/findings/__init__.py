"""Review findings: the store, embeddings, recall and `cra findings`."""
