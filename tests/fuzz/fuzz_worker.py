"""Runs fuzz cases through ``prefduel``'s entry point in one process under a memory cap.

Started by `fuzz_harness.run_cases` as ``python fuzz_worker.py CAP_BYTES``; reads a JSON list of
cases on stdin and writes one JSON result per line. Each case runs ``prefduel.cli.main.main``
in a fresh folder holding the case's files, with stdout and stderr captured and an alarm as
its time limit. Anything that escapes ``main`` (a traceback the user would see) is reported
with its stack; so is running out of the memory cap.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings


class CaseTimeout(BaseException):
    """The case ran past its time limit."""


def _alarm(signum, frame):
    raise CaseTimeout


def _write(folder: str, files: dict) -> None:
    for name, data in files.items():
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            if isinstance(data, list):  # prefix, unit, suffix, count
                prefix, unit, suffix = (base64.b64decode(x) for x in data[:3])
                handle.write(prefix)
                for _ in range(data[3] // 2**16):
                    handle.write(unit * 2**16)
                handle.write(unit * (data[3] % 2**16) + suffix)
            else:
                handle.write(base64.b64decode(data))


def _run(case: dict, root: str, shared: dict) -> dict:
    from prefduel.cli.main import main

    folder = tempfile.mkdtemp(dir=root)
    _write(folder, shared)
    _write(folder, case["files"])
    out, err = io.StringIO(), io.StringIO()
    crash, code = None, None
    started = time.perf_counter()
    os.chdir(folder)
    signal.alarm(case.get("timeout", 60))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            with warnings.catch_warnings():
                warnings.simplefilter("default")
                code = main(case["argv"])
    except CaseTimeout:
        crash = f"timeout after {case.get('timeout', 60)} s"
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:  # what the user would see as a traceback
        crash = traceback.format_exc()
    finally:
        signal.alarm(0)
        os.chdir(root)
    return {
        "id": case["id"],
        "code": code,
        "crash": crash,
        "stdout": out.getvalue()[-4000:],
        "stderr": err.getvalue()[-4000:],
        "seconds": round(time.perf_counter() - started, 3),
        "folder": folder,
    }


def _cleanup(result: dict, keep: bool) -> None:
    if not keep:
        shutil.rmtree(result["folder"], ignore_errors=True)


def main() -> None:
    cap = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    signal.signal(signal.SIGALRM, _alarm)
    payload = json.load(sys.stdin)
    root = tempfile.mkdtemp(prefix="prefduel-fuzz-")
    for case in payload["cases"]:
        result = _run(case, root, payload["shared"])
        _cleanup(result, keep=case.get("keep", False))
        sys.__stdout__.write(json.dumps(result) + "\n")
        sys.__stdout__.flush()
    if not any(case.get("keep") for case in payload["cases"]):
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
