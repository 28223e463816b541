"""Differential attribution: where a variant's difference from the baseline went, function by
function, from any profile (sampled, in seconds; counted, in instructions). ``analysis``
computes it from the stored profiles, ``sections`` its report views."""
