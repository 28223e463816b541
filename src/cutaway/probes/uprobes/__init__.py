"""The uprobes probe: phases of unmodified binaries, a function's entry to its return, recorded
by kernel uprobes through bpftrace as spans (cutaway.probes.span_model)."""
