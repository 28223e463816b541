"""Metrics from where users already have them (``[[metrics]]``): a measured command's output
(a regular expression, or the parser of a load tool: ab, wrk, redis-benchmark), a command run
after each run, the size of a file or directory, and a running process sampled from /proc.

- ``parsers``: read figures from the output of load tools;
- ``process``: find a process (pid file, name, listening port) and read it in /proc;
- ``sampler``: one background thread that samples readings at an interval (time series);
- ``sources``: one reader per ``source`` of a MetricSpec;
- ``collect``: the per-run collector the runner calls around every measured run;
- ``series``: time series as stored with runs, and their CSV/JSON export.
"""
