"""Probes: what cutaway measures inside a run beyond wait4 (per-call latency of libc calls)."""
