"""The CI gate (`cutaway check`): does a candidate cost more than a baseline, beyond a
threshold, with confidence? ``rules`` reads the thresholds (flags or the experiment file's
``[check]`` table), ``decision`` judges the stored rounds and tells the runner when to stop,
``summary`` writes the verdict as Markdown for a pull request. `cutaway bisect`
(cutaway.bisect) asks the same question of every commit it tests."""
