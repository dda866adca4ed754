"""turns.py: the harness's half of wl.turn's protocol: processes alive at the same time that take
turns, one at a time (run.py --lockstep for the sides of a pair, compare_builds.py --lockstep for
the variants of a round).

A TurnTaker starts one process with two pipes named in wl.TURNS_ENV (the script writes b"t" when a
turn ends, or when it is ready; the harness writes b"g" to begin its next) and its output going to
files, so that a process waiting for its turn never holds up the others on a full pipe. Its time
limit counts its own time only: start-up until it is ready, then its turns, not the time it waits
while the others run. take_turns() runs the rounds: start-up side by side, then every live process
one turn a round, in the given order in odd rounds and reversed in even ones, after GAP_S of quiet
before each turn (what a turn left spinning, an OpenMP team, settles in that time). A process that
ends, crashes or runs past its time leaves the others to go on.
Standard library only."""
import os
import select
import signal
import subprocess
import tempfile
import time

import wl

GAP_S = 0.01  # quiet before each turn


def kill_group(proc):
    """Ends a process's group (started in a session of its own: only its processes)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def reap(proc, timeout, on_timeout):
    """Waits for proc to end, polling wait4 (for its resource usage: the process's own peak
    resident set, and its waited-for children's), and calls on_timeout() once, which must end it,
    when timeout seconds pass first. Returns (exit code, rusage, whether on_timeout was called)."""
    deadline, late = time.monotonic() + timeout, False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage, late
        if not late and time.monotonic() > deadline:
            late = True
            on_timeout()
        time.sleep(0.01)


class TurnTaker:
    """One process taking turns. After finish(): rc (None if it never started), out and err (bytes),
    wall_s, turns, timed_out, peak_rss_kib (the process's own and its waited-for children's peak,
    from wait4); start_error names why it could not start."""

    def __init__(self, argv, env, cwd, limit, workdir, preexec_fn=None):
        self.proc, self.start_error, self.timed_out, self.turns, self.used = None, None, False, 0, 0.0
        self.limit = limit
        self.rc, self.out, self.err, self.wall_s, self.peak_rss_kib = None, b"", b"", None, None
        self._out = tempfile.TemporaryFile(dir=workdir)
        self._err = tempfile.TemporaryFile(dir=workdir)
        go_read, self.go = os.pipe()
        self.ended, ended_write = os.pipe()
        env = dict(env)
        env[wl.TURNS_ENV] = "%d,%d" % (go_read, ended_write)
        self.t0 = time.monotonic()
        try:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=self._out,
                                         stderr=self._err, start_new_session=True, pass_fds=(go_read, ended_write),
                                         preexec_fn=preexec_fn)
        except OSError as e:
            self.start_error = "cannot start %s: %s" % (argv[0], e)
        finally:
            os.close(go_read)
            os.close(ended_write)

    def left(self):
        return max(0.0, self.limit - self.used)

    def give_up(self):
        self.timed_out = True
        kill_group(self.proc)

    def read_turn_end(self):
        """True when the process wrote the end of a turn; False when it ended (end of file)."""
        return os.read(self.ended, 1) == b"t"

    def turn_ended(self):
        """Waits until the process ends its turn (True) or ends, or runs past its time (False; then
        it is killed)."""
        began = time.monotonic()
        ready, _, _ = select.select([self.ended], [], [], self.left())
        self.used += time.monotonic() - began
        if not ready:
            self.give_up()
            return False
        return self.read_turn_end()

    def grant(self):
        """Begins the process's next turn; False when it is gone."""
        self.turns += 1
        try:
            os.write(self.go, b"g")
            return True
        except OSError:  # it closed its end: ended
            return False

    def finish(self):
        """Closes the pipes (a process still running then runs on alone), waits for the process
        within its time left (then kills it) and collects its exit and output."""
        for fd in (self.go, self.ended):
            os.close(fd)
        if self.proc is not None:
            self.rc, usage, _ = reap(self.proc, max(0.1, self.left()), self.give_up)
            self.peak_rss_kib = usage.ru_maxrss
            self.wall_s = round(time.monotonic() - self.t0, 3)
            self._out.seek(0)
            self._err.seek(0)
            self.out, self.err = self._out.read(), self._err.read()
        self._out.close()
        self._err.close()


def all_ready(takers):
    """The takers whose processes became ready (their first turn() call), waiting for all at once:
    start-up runs side by side. One that ends first, or runs past its time, is left out."""
    waiting = {t.ended: t for t in takers if t.proc is not None}
    ready = []
    while waiting:
        now = time.monotonic()
        for t in [t for t in waiting.values() if now - t.t0 >= t.limit]:
            del waiting[t.ended]
            t.used = now - t.t0
            t.give_up()
        if not waiting:
            break
        wait_s = min(t.limit - (now - t.t0) for t in waiting.values())
        fds, _, _ = select.select(list(waiting), [], [], max(0.0, wait_s))
        for fd in fds:
            t = waiting.pop(fd)
            t.used = time.monotonic() - t.t0
            if t.read_turn_end():
                ready.append(t)
    return [t for t in takers if t in ready]


def take_turns(takers):
    """Runs the takers' turns to the end (the module's docstring) and finishes each."""
    try:
        live = all_ready(takers)
        rnd = 0
        while live:
            for t in list(live if rnd % 2 == 0 else reversed(live)):
                time.sleep(GAP_S)
                if not (t.grant() and t.turn_ended()):
                    live.remove(t)
            rnd += 1
    except BaseException:  # interrupted: take the processes down with us
        for t in takers:
            if t.proc is not None:
                kill_group(t.proc)
        raise
    for t in takers:
        t.finish()
