"""Triage of dead workers (issue 30 item 2): one native bug is one cluster, however many workers it killed.

Crash records cluster by signal and the innermost frames of the worker's stack
(results/triage/crash_frames.py), never by their message, which names the worker.
"""

from __future__ import annotations

from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.results.triage.clusters import clusters, render_text
from torchcts.results.triage.crash_frames import crash_signature, native_frames, python_frames, reference_death


def faulthandler_tail(address: str, line: int, func: str = "_mul_complex128_segv") -> str:
    return f"""Fatal Python error: Segmentation fault

Current thread {address} (most recent call first):
  File "<torchcts>/torchcts/sim/faults.py", line {line} in {func}
  File "<torchcts>/torchcts/sim/tensor.py", line {line + 7} in dispatch
  File "<purelib>/torch/_ops.py", line 875 in __call__
  File "<torchcts>/torchcts/cases/opinfo/run.py", line 42 in call
  File "<torchcts>/torchcts/engine/runner.py", line 36 in run_case

Extension modules: numpy._core._multiarray_umath, torch._C (total: 2)"""


def crash(case: str, worker: str, tail: str, sig: str | None = "SIGSEGV", exit_code: int | None = -11) -> CaseRecord:
    how = sig or f"exit code {exit_code}"
    return CaseRecord(id=case, suite="opinfo", ops=[f"aten::{case.split('/')[1]}"], dtype=case.split("/")[2],
                      op=case.split("/")[1], status=Status.CRASHED, signal=sig, exit_code=exit_code, output_tail=tail,
                      message=f"worker {worker} died ({how}) while running this case; it was replaced")


def test_same_signal_and_frames_on_other_cases_workers_and_addresses_is_one_cluster():
    a = crash("opinfo/mul/complex128/forward", "gw0", faulthandler_tail("0x00007f3a1c2b4740", 359))
    b = crash("opinfo/add/complex64/out", "gw17", faulthandler_tail("0x00007fe00aa10080", 412))
    found = clusters([a, b])
    assert len(found) == 1, [c.title for c in found]
    assert found[0].count == 2 and set(found[0].ops) == {"mul", "add"}
    assert found[0].title == "crash: SIGSEGV at faults.py:_mul_complex128_segv < tensor.py:dispatch < _ops.py:__call__"
    assert "gw" not in found[0].title and "0x" not in found[0].title


def test_different_signals_or_top_frames_are_different_clusters():
    seg = crash("opinfo/mul/complex128/forward", "gw0", faulthandler_tail("0x1", 1))
    abort = crash("opinfo/mul/complex128/out", "gw0", faulthandler_tail("0x1", 1), sig="SIGABRT", exit_code=-6)
    other = crash("opinfo/mul/complex128/method", "gw0", faulthandler_tail("0x1", 1, func="_other_kernel"))
    found = clusters([seg, abort, other])
    assert len(found) == 3, [c.title for c in found]
    assert {c.title.split(" at ")[0] for c in found} == {"crash: SIGSEGV", "crash: SIGABRT"}


def test_a_pass_through_wrapper_frame_does_not_split_a_bug():
    """torch._dynamo.disable's wrapper sits on some paths into the same kernel, not on others."""
    plain = faulthandler_tail("0x1", 359)
    wrapped = plain.replace('  File "<purelib>/torch/_ops.py"',
                            '  File "<purelib>/torch/_dynamo/eval_frame.py", line 1446 in _fn\n  File "<purelib>/torch/_ops.py"')
    a, b = crash("opinfo/sum/float32/forward", "gw0", plain), crash("opinfo/mean/float32/forward", "gw1", wrapped)
    assert "eval_frame" in (b.output_tail or "") and crash_signature(a) == crash_signature(b)


def test_a_native_stack_in_the_tail_wins_over_python_frames():
    """A backend's own handler (or gdb, a sanitizer) printed the C stack: its top frame names the bug."""
    native = ("#0  0x00007f1234 in __pthread_kill_implementation (no_tid=0) at ./nptl/pthread_kill.c:44\n"
              "#1  0x00007f12 in raise () from /lib/x86_64-linux-gnu/libc.so.6\n"
              "#2  0x00007f0000aa in npu_launch_kernel (stream=0x5) at kernels/launch.cc:120\n"
              "#3  0x00007f0000bb in at::native::mul_npu(at::Tensor const&) () from /opt/npu/lib/libnpu.so\n")
    a = crash("opinfo/mul/float32/forward", "gw1", native + faulthandler_tail("0x1", 1))
    b = crash("opinfo/div/float32/forward", "gw4", native.replace("0x00007f0000aa", "0x00007f9999aa")
              .replace("launch.cc:120", "launch.cc:121") + faulthandler_tail("0x2", 9, func="_elsewhere"))
    assert crash_signature(a) == crash_signature(b) == (
        "SIGSEGV at launch.cc:npu_launch_kernel < libnpu.so:at::native::mul_npu")
    assert len(clusters([a, b])) == 1


def test_glibc_backtrace_and_exit_codes():
    """glibc's backtrace_symbols format (libSegFault, a backend's handler); a worker that exited has no stack."""
    text = ("/lib/x86_64-linux-gnu/libc.so.6(+0x42520)[0x7f0e2a842520]\n"
            "/opt/npu/libnpu.so(npu_copy_d2h+0x1a)[0x7f0e2a800000]\n"
            "/opt/npu/libnpu.so(+0x2200)[0x7f0e2a802200]\n")
    assert native_frames(text) == ["libnpu.so:npu_copy_d2h", "libnpu.so:?"]
    exited = crash("planted/g_exit/float32", "gw2", "", sig=None, exit_code=7)
    assert crash_signature(exited) == "exit code 7"
    assert clusters([exited])[0].title == "crash: exit code 7"


def test_timeouts_cluster_by_where_they_hung():
    """A hung case's tail is traceback.format_stack (innermost last): the innermost frames count."""
    def hung(case: str, worker: str, line: int) -> CaseRecord:
        tail = (f"timeout after 8.0\n--- where the case was after 8 s ---\n"
                f'  File "<torchcts>/torchcts/engine/runner.py", line 36, in run_case\n    fn(ctx)\n'
                f'  File "<torchcts>/tests/helpers/planted.py", line {line}, in d_hang\n    time.sleep(600)\n')
        return CaseRecord(id=case, suite="planted", ops=["aten::planted_hang"], status=Status.TIMEOUT, timeout_s=8.0,
                          output_tail=tail, message=f"exceeded the 8 s timeout; worker {worker} was replaced")
    a, b = hung("planted/d_hang/float32", "gw0", 40), hung("planted/d_hang/float64", "gw3", 41)
    assert python_frames(a.output_tail or "") == ["planted.py:d_hang", "runner.py:run_case"]
    found = clusters([a, b])
    assert [c.title for c in found] == ["timeout at planted.py:d_hang < runner.py:run_case"]
    assert "1. [2 cases] timeout at planted.py:d_hang" in render_text([a, b])



def test_a_reference_death_is_read_on_the_dying_thread_not_the_first_listed():
    """faulthandler lists threads newest first: a watchdog thread comes before the one that died in
    CPU's reference; the dying one is `Current thread`, and only its stack decides."""
    watchdog = '  File "/x/threading.py", line 331 in wait\n  File "/x/threading.py", line 1010 in run\n'
    in_reference = ('  File "/s/torchcts/cases/opinfo/run.py", line 113 in call\n'
                    '  File "/s/torchcts/cases/opinfo/run.py", line 139 in reference_call\n')
    in_device = '  File "/s/torchcts/cases/opinfo/run.py", line 200 in device_call\n'

    def log(first: str, current: str) -> str:
        return ("Fatal Python error: Floating point exception\n\nThread 0x00007f01 (most recent call first):\n"
                f"{first}\nCurrent thread 0x00007f00 (most recent call first):\n{current}\n")

    assert reference_death(log(watchdog, in_reference)) == "run.py:reference_call"
    assert reference_death(log(in_reference, in_device)) is None  # the device's death beside a reference
    assert reference_death(f"Stack (most recent call first):\n{in_reference}") == "run.py:reference_call"
    # Python 3.14 adds the C stack after the Python one (one thread dumped, as a worker does)
    c_stack = "Current thread's C stack trace (most recent call first):\n  Binary file \"/lib/libc.so.6\", at raise+0x1\n"
    assert reference_death(f"Stack (most recent call first):\n{in_reference}\n{c_stack}") == "run.py:reference_call"
