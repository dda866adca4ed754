"""groups.py: one command run once per CPU, all at the same time, each group (the command and every
process it starts) bound to a CPU of its own, as `taskset -c CPU` would bind it, its output to a log
of its own. run.py --groups (each group writes OUT/g<CPU>, merged into OUT) and compare_builds.py
--groups (each writes FILE.g<CPU>, merged as --merge would) use it: what the suite's one-CPU
measurements did as a shell loop of taskset commands and a merge (README.md here, "One CPU per
group"). SIGTERM or SIGINT reach every group once, and each still writes what it has.
Standard library only."""
import os
import signal
import subprocess


def without(argv, option):
    """argv less `option` and its value (`--opt V` or `--opt=V`)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == option:
            skip = True
        elif not a.startswith(option + "="):
            out.append(a)
    return out


def pinned_to(cpus):
    """A child's preexec_fn putting it on the CPUs cpus only, or None (all of ours) when cpus is empty."""
    return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None


def run(jobs, say=print):
    """jobs: [(cpu, argv, log path)]. Starts every argv bound to its CPU, its stdout and stderr to
    its log, waits for all, and returns their exit statuses in the jobs' order."""
    procs = []
    for cpu, argv, log in jobs:
        with open(log, "w") as logf:
            # a session of its own: a Ctrl-C at the terminal reaches the group once, through stop_all
            procs.append((cpu, subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True,
                                                preexec_fn=pinned_to({cpu}))))
        say("# group on CPU %d: %s, output in %s" % (cpu, " ".join(argv[1:]), log))

    def stop_all(signum, _frame):
        for _cpu, p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    old = {s: signal.signal(s, stop_all) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        statuses = []
        for cpu, p in procs:
            statuses.append(p.wait())
            say("# group on CPU %d: exit status %d" % (cpu, statuses[-1]))
        return statuses
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
