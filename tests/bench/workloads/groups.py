"""groups.py: run.py --groups CPU[,CPU...]: the same run once per CPU named, all at the same time, each
group (its run.py and every process that starts) bound to a CPU of its own, as `taskset -c CPU` would
bind it, each writing its folder OUT/g<CPU> and its output to OUT/g<CPU>.log; run.py then merges the
folders into OUT (merge.py: groups on other CPUs of one machine are one instance). What the suite's
one-CPU measurements did as a shell loop of taskset commands and a --merge (README.md here,
"One CPU per group"). SIGTERM or SIGINT reach every group, each of which still writes its table.
Standard library only."""
import os
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


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


def folder(out, cpu):
    return os.path.join(out, "g%d" % cpu)


def run(argv, cpus, out, say=print):
    """Starts `run.py argv --out OUT/g<CPU>` bound to each CPU, waits for all, and returns their
    folders and exit statuses ([(folder, status)], in the CPUs' order). argv: run.py's arguments
    without --groups and --out."""
    os.makedirs(out, exist_ok=True)
    procs = []
    for cpu in sorted(cpus):
        logf = open(folder(out, cpu) + ".log", "w")
        cmd = [sys.executable, os.path.join(HERE, "run.py")] + argv + ["--out", folder(out, cpu)]
        # a session of its own: a Ctrl-C at the terminal reaches the groups once, through stop_all
        procs.append((cpu, logf, subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True,
                                                  preexec_fn=lambda c=cpu: os.sched_setaffinity(0, {c}))))
        say("# group on CPU %d: %s, output in %s.log" % (cpu, " ".join(cmd[1:]), folder(out, cpu)))

    def stop_all(signum, _frame):
        for _cpu, _logf, p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    old = {s: signal.signal(s, stop_all) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        done = []
        for cpu, logf, p in procs:
            status = p.wait()
            logf.close()
            say("# group on CPU %d: exit status %d" % (cpu, status))
            done.append((folder(out, cpu), status))
        return done
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
