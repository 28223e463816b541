"""`cutaway bisect`: find the commit that made a workload slower. ``git`` drives the
repository (commits, worktrees), ``search`` is the bisection itself (pure: which commit next,
what is known), ``session`` builds each commit in a worktree of its own and compares it with
the good commit in paired, interleaved rounds, with the gate's adaptive stopping
(cutaway.gate)."""
