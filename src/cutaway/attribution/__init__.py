"""Differential attribution: where a variant's difference from the baseline went, function by
function, from any profile (sampled, in seconds; counted, in instructions). ``analysis``
computes it from the stored profiles, ``sections`` its report views."""

LISTED = 15  # functions listed per variant, kind and profile (seed 002's top 15)
JSON_LISTED = 40  # in the JSON export
