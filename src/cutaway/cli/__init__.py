"""The command line: argument parsing and nothing else."""
