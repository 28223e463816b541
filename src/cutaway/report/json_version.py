"""The JSON report's name and version (docs/json-format.md), in a module of their own: the
format list (cutaway.report) names the version without importing the JSON renderer, which
reads every registered probe."""

FORMAT_NAME = "cutaway-report"
FORMAT_VERSION = 9
