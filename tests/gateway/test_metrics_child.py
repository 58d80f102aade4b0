"""`metrics.child`: the request path's cached `labels()` children count on the same series."""

from prometheus_client import CollectorRegistry, Counter

from gateway import metrics


def test_a_kept_child_counts_on_the_series_labels_names():
    registry = CollectorRegistry()
    counter = Counter("kept_total", "A counter.", ["route", "version"], registry=registry)

    metrics.child(counter, "r", "1").inc()
    metrics.child(counter, "r", "1").inc(2)
    counter.labels("r", "1").inc()
    metrics.child(counter, "r", "2").inc()

    assert metrics.child(counter, "r", "1") is counter.labels("r", "1")
    assert registry.get_sample_value("kept_total", {"route": "r", "version": "1"}) == 4
    assert registry.get_sample_value("kept_total", {"route": "r", "version": "2"}) == 1
