"""A signal in the last moments of a run, for the subprocesses of tests/faults/test_signal_after_record.py
(put on their PYTHONPATH; nothing in wtb_local knows of it).

`WTB_FAULT_LATE_SIGNAL=closed`: the process sends itself the signal named by `WTB_FAULT_LATE_SIGNAL_NAME`
(default SIGINT) as soon as the run's record has closed `complete` (RunRecord.close returned);
`WTB_FAULT_LATE_SIGNAL=exit`: from an atexit callback, when the process is ending after its last output.
"""

import os
import signal

_WHEN = os.environ.get("WTB_FAULT_LATE_SIGNAL")
_SIGNAL = getattr(signal, os.environ.get("WTB_FAULT_LATE_SIGNAL_NAME", "SIGINT"))

if _WHEN == "exit":
    import atexit

    atexit.register(lambda: os.kill(os.getpid(), _SIGNAL))
elif _WHEN == "closed":
    from wtb_local.run.record.record import RunRecord

    _close = RunRecord.close

    def _close_then_signal(self, status, *args, **kwargs):  # type: ignore[no-untyped-def]
        problem = _close(self, status, *args, **kwargs)
        if status == "complete" and problem is None:
            os.kill(os.getpid(), _SIGNAL)
        return problem

    RunRecord.close = _close_then_signal
