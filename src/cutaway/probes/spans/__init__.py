"""The spans probe: named, nested phases of a program's operations, from three sources that all
end as :class:`cutaway.probes.spans.model.Span` lists per run: the span SDK's record files
(``native/include/cutaway/span.h`` in C, :mod:`cutaway.spans` in Python), uprobes on unmodified
binaries (``cutaway.probes.uprobes``) and OpenTelemetry OTLP JSON files.

``model`` is the common currency (spans and how begin/end events nest into them); it imports
nothing but the standard library, so every source and the dissection view can share it."""
