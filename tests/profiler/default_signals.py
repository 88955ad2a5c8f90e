"""Start a process that a test will signal with every signal at its default disposition, whatever the test runner
inherited: a shell starts a background job (`.ci/run &`, a CI script) with SIGINT and SIGQUIT ignored, an ignored
signal stays ignored across exec, and Python then never installs its Ctrl-C handler, so a test that sends SIGINT
would wait for a process that cannot hear it. The command lines themselves keep the shell's convention (a job the
shell told to ignore Ctrl-C ignores it); only the tests' own processes are reset.

    subprocess.Popen(cmd, preexec_fn=default_signals)
"""
import signal

RESET = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGUSR1, signal.SIGHUP)


def default_signals() -> None:
    """preexec_fn: every signal a test sends back to SIG_DFL, and none of them blocked."""
    for sig in RESET:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, RESET)


def ignored_signals(pid: int) -> set[int]:
    """The signals process `pid` ignores (SigIgn of /proc/<pid>/status)."""
    with open(f"/proc/{pid}/status") as status:
        mask = int(next(line for line in status if line.startswith("SigIgn:")).split()[1], 16)
    return {n for n in range(1, 65) if mask >> (n - 1) & 1}
