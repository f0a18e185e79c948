"""Scoped memories: relevance of each memory to a context, budget-aware selection, the memory section."""
