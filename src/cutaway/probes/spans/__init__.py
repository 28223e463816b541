"""The spans probe: named, nested phases of a program's operations, from three sources that all
end as :class:`cutaway.probes.span_model.Span` lists per run: the span SDK's record files
(``native/include/cutaway/span.h`` in C, :mod:`cutaway.spans` in Python), uprobes on unmodified
binaries (``cutaway.probes.uprobes``) and OpenTelemetry OTLP JSON files.

The common currency is outside the package, since the uprobes probe shares it:
``cutaway.probes.span_model`` (spans and how begin/end events nest into them; it imports nothing
but the standard library) and ``cutaway.probes.phase_tables`` (a run's spans summed per phase,
the table every source stores and this probe's analysis reads)."""
