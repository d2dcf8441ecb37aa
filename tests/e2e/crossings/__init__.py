"""Generated (Hypothesis) crossings: strategies, an independent model from the docs, and the profiles."""
