"""The fake upstream provider: an OpenAI- and Anthropic-compatible HTTP server with fault
injection, used by the demo, the API tests and the benchmark.

It needs no Django settings. Run it with `python -m fakeupstream --port N` or
`manage.py fakeupstream --port N`; from tests, use
`fakeupstream.process.running_fake_upstream`. Usage: docs/fakeupstream.md.
"""
