"""Smart tiers (SPEC §5): the easy/hard verdict and the upward-only session pins."""
