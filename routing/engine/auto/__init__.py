"""The auto router (SPEC R-AUTO-1…3): workspace settings and the workload classifier."""
