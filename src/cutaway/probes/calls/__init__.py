"""The calls probe: every call of chosen libc functions timed in place by an LD_PRELOAD
interposer (native/cw_calls.c), split by its position in its process.

One package holds the probe's parts: ``capture`` (the Probe: attach, collect, encode) and
``analysis`` (per-position summaries and comparisons), with its report parts and exports. The
interposer's record files and catalog (cutaway.probes.interposer) and the stored columns
(cutaway.probes.timed_calls) are outside it: the spans and syscalls probes use them too."""
