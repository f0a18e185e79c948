"""Scoped memories (seed 003): relevance of each memory to a context, budget-aware selection, the memory section."""
