"""The runner: rounds, order, spawn, measure. It emits events and never prints."""
