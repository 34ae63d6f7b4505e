"""Run inside a sandbox by tests/test_sandbox.py: tries each way out and prints one JSON object,
{attempt: "escaped: ..." | "blocked: ..."}. Standard library only; argv[1] is a JSON object of targets."""

import json
import os
import signal
import socket
import subprocess
import sys

targets = json.loads(sys.argv[1])
results: dict[str, str] = {}


def attempt(name, action):
    try:
        results[name] = f"escaped: {str(action())[:80]}"
    except Exception as exc:  # every failure is the sandbox doing its job
        results[name] = f"blocked: {type(exc).__name__}: {exc}"[:160]


def read(path):
    with open(path, "rb") as f:
        return f.read(200)


def init_environ():
    """pid 1 is the sandbox's own init (or the program itself): reading it is harmless unless it holds a secret."""
    if os.getpid() == 1:
        raise LookupError("this program is pid 1 itself")
    with open("/proc/1/environ", "rb") as f:
        data = f.read()
    if targets["secret"].encode() in data:
        return data[:80]
    raise LookupError("readable, but holds none of the server's secrets")


def server_secret_in_environment():
    found = [k for k, v in os.environ.items() if targets["secret"] in v or k == "STITCH_AUTH_TOKEN"]
    if found:
        return found
    raise LookupError(f"not in {sorted(os.environ)}")


def write_outside():
    path = os.path.join(targets["outside_dir"], "pwned")
    with open(path, "w") as f:
        f.write("written from the sandbox")
    return path


def connect():
    with socket.create_connection(("127.0.0.1", targets["port"]), timeout=2) as s:
        return s.recv(16)


def start_daemon():
    """Double fork + setsid: a grandchild re-parented away from the sandbox's main process."""
    code = "import time; time.sleep(120)"
    subprocess.Popen([sys.executable, "-c", code, targets["daemon_marker"]], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     preexec_fn=lambda: os.fork() and os._exit(0))
    return "started"


attempt("server_environ", lambda: read(f"/proc/{targets['server_pid']}/environ"))
attempt("server_cmdline", lambda: read(f"/proc/{targets['server_pid']}/cmdline"))
attempt("init_environ", init_environ)
attempt("secret_env", server_secret_in_environment)
attempt("data_dir_file", lambda: read(targets["data_file"]))
attempt("write_outside", write_outside)
attempt("tcp_localhost", connect)
attempt("signal_server", lambda: os.kill(targets["server_pid"], 0))
attempt("kill_decoy", lambda: os.kill(targets["decoy_pid"], signal.SIGKILL))
attempt("stop_decoy", lambda: os.kill(targets["decoy_pid"], signal.SIGSTOP))
os.write(targets["pipe_fd"], b"through the pipe")
results["memfd"] = os.pread(targets["memfd"], 64, 0).decode()
results["uid"] = os.getuid()
results["pid"] = os.getpid()
results["visible_pids"] = sum(name.isdigit() for name in os.listdir("/proc"))
results["daemon"] = start_daemon()
print(json.dumps(results), flush=True)
