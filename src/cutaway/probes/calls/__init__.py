"""The calls probe: every call of chosen libc functions timed in place by an LD_PRELOAD
interposer (native/cw_calls.c), split by its position in its process.

One package holds the probe's parts: ``capture`` (the Probe: attach, collect, encode),
``records`` (the native record files and their catalog), ``blob`` (the stored columns) and
``analysis`` (per-position summaries and comparisons)."""
