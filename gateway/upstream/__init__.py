"""Upstream I/O: the one executor (`execute`), stream relaying, the pooled HTTP client,
the provider adapters, and the scrubbing of untrusted upstream text (SPEC D-17)."""
