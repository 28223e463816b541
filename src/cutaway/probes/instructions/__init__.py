"""The instructions probe: instructions executed, counted by valgrind's callgrind, in runs of
their own (valgrind slows a program tens of times). ``callgrind`` reads callgrind's output
files into folded stacks weighted in instructions, ``capture`` holds the Probe. The folded
stacks are stored as profiles (cutaway.probes.stacks, unit ``instructions``), so the
profile views, exports and the attribution read them like sampled ones; the whole-process
count is also the metric ``instructions``, compared like ``wall``."""
