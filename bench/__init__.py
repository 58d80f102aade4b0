"""`make bench`: the gateway against a fake upstream, direct vs through the gateway,
non-streaming and streaming at several concurrencies, with the issue's bars judged.
Method and results: docs/performance.md."""
