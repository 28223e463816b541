"""The largest value each number of an experiment (its file's keys, their command-line options)
may take, checked when the experiment is read: a value past them is a typo or a test of the
tool, and would otherwise fail later (after the experiment is stored) or overflow a store's
64-bit integers. Each is far above any real use; docs/experiment-file.md and docs/cli.md list
them."""

from __future__ import annotations

from cutaway.settings_reading import MAX_STORED_INTEGER as MAX_STORED_INTEGER

# Rounds: every round is at least one stored run per variant.
MAX_ROUNDS = 1_000_000
MAX_WARMUP_ROUNDS = 1_000_000
MAX_SEED = MAX_STORED_INTEGER
MAX_VARIANTS = 1_000_000  # the most `max_variants` / --max-variants may allow

SECONDS_PER_DAY = 86_400.0
# One run, one hook, one build: a week. The whole experiment: a year.
MAX_RUN_SECONDS = 7 * SECONDS_PER_DAY
MAX_EXPERIMENT_SECONDS = 365 * SECONDS_PER_DAY
# A metric's sampling interval: an hour.
MAX_SAMPLE_INTERVAL_SECONDS = 3_600.0

# cutaway bisect: re-runs of an inconclusive test, each with twice the budget before.
MAX_BISECT_RETRIES = 10
