"""Load: servers measured under a load phase driven by cutaway's native generator (cw_load)."""
