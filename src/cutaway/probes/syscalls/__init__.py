"""The syscalls probe: chosen system calls of any program, static binaries included, timed by
strace. ``capture`` holds the Probe; its calls are stored and analysed as the calls probe's."""
