"""The profile probe: where the time went, as stacks. perf samples on-CPU stacks and the
scheduler's switches give off-CPU time with the stack where a thread blocked, in runs of their
own (sampling perturbs timing). ``fold`` turns perf script output into folded stacks,
``records`` stores them per run (weights with a unit), ``capture`` holds the Probe,
``analysis`` the top stacks and functions, ``sections`` their report sections, ``export``
the folded and speedscope files."""
