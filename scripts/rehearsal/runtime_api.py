"""One Lambda invocation of a deployed function's own bootstrap, behind a loopback Runtime API.

The emulator's Lambda Invoke calls `invoke`: it unpacks the function's deployed zip, starts
its `bootstrap` with the environment the stack gave the function (plus what Lambda itself
sets), serves the Runtime API's next/response/error calls for one event on a loopback port
(https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html), and stops the process once
it has answered. The bootstrap's AWS calls go to the emulator (AWS_ENDPOINT_URL).

What differs from Lambda, and why:
* /var/task is the unpacked zip's folder: the environment's values naming /var/task are
  rewritten to it (this machine has no /var/task to give each function).
* REHEARSAL_CA_FILE, when set, replaces the RDS CA bundle in the unpacked zip: the local
  database's certificate is signed by the suite's test CA, not by Amazon's.
* REHEARSAL_OVERRIDES names a JSON file of variables to replace per function, read at each
  invocation: the rehearsal points the endpoint's database host at the local PgBouncer (the
  proxy's host name resolves nowhere here) and its JWKS at the test key.
* Each function runs with credentials naming it (access key id `rehearsal-<function>`), so
  the emulator's recording attributes every AWS call to a function, and so to its role.
* Invocations run one at a time, as the rehearsal makes them.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ENDPOINT = "http://localhost:5000"
CA_BUNDLE = "infra/certs/aws-rds-and-proxy-ca-bundle.pem"
_lock = threading.Lock()
_unpacked: dict[str, Path] = {}


def unpack(code: bytes) -> Path:
    digest = hashlib.sha256(code).hexdigest()[:16]
    if digest not in _unpacked:
        # Under the rehearsal's output folder (emptied at each start), not left in /tmp.
        parent = os.environ.get("REHEARSAL_LOG_DIR") or None
        target = Path(tempfile.mkdtemp(prefix=f"task-{digest}-", dir=parent)).resolve()
        with tempfile.NamedTemporaryFile() as f:
            f.write(code)
            f.flush()
            with zipfile.ZipFile(f.name) as z:
                z.extractall(target)
        (target / "bootstrap").chmod(0o755)
        if ca := os.environ.get("REHEARSAL_CA_FILE"):
            if (target / CA_BUNDLE).is_file():
                shutil.copyfile(ca, target / CA_BUNDLE)
        _unpacked[digest] = target
    return _unpacked[digest]


class _Invocation:
    def __init__(self, event: Any, function_arn: str, timeout_s: float):
        self.request_id = str(uuid.uuid4())
        self.event = json.dumps(event).encode()
        self.function_arn = function_arn
        self.deadline_ms = int((time.time() + timeout_s) * 1000)
        self.delivered = False
        self.result: bytes | None = None
        self.errored = False
        self.done = threading.Event()


def _handler(invocation: _Invocation) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, status: int, body: bytes = b"{}", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            if self.path != "/2018-06-01/runtime/invocation/next":
                return self._answer(404)
            if invocation.delivered:
                # The runtime asks for the next event after answering: there is none, and the
                # process is stopped while it waits.
                invocation.done.wait()
                time.sleep(3600)
            invocation.delivered = True
            self._answer(
                200,
                invocation.event,
                {
                    "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
                    "Lambda-Runtime-Deadline-Ms": str(invocation.deadline_ms),
                    "Lambda-Runtime-Invoked-Function-Arn": invocation.function_arn,
                    "Lambda-Runtime-Trace-Id": f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]};Sampled=0",
                },
            )

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            prefix = f"/2018-06-01/runtime/invocation/{invocation.request_id}/"
            if self.path == prefix + "response":
                invocation.result = body
            elif self.path in (prefix + "error", "/2018-06-01/runtime/init/error"):
                invocation.result, invocation.errored = body, True
            else:
                return self._answer(404)
            self._answer(202)
            invocation.done.set()

    return Handler


def invoke(fn: Any, event: Any) -> tuple[str, bool, str]:
    """Runs one invocation of `fn` (moto's LambdaFunction); returns (result, errored, logs)."""
    with _lock:
        task = unpack(fn.code_bytes)
        timeout = float(fn.timeout)
        invocation = _Invocation(event, fn.function_arn, timeout)
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(invocation))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        env = {k: str(v).replace("/var/task", str(task)) for k, v in (fn.environment_vars or {}).items()}
        if overrides := os.environ.get("REHEARSAL_OVERRIDES"):
            if Path(overrides).is_file():
                env.update(json.loads(Path(overrides).read_text()).get(fn.function_name, {}))
        env.update(
            PATH=os.environ["PATH"],
            AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{server.server_address[1]}",
            AWS_LAMBDA_FUNCTION_NAME=fn.function_name,
            AWS_LAMBDA_FUNCTION_MEMORY_SIZE=str(fn.memory_size),
            AWS_LAMBDA_FUNCTION_VERSION="$LATEST",
            AWS_LAMBDA_LOG_GROUP_NAME=f"/aws/lambda/{fn.function_name}",
            AWS_LAMBDA_LOG_STREAM_NAME="rehearsal",
            AWS_REGION=fn.region,
            AWS_DEFAULT_REGION=fn.region,
            AWS_ENDPOINT_URL=ENDPOINT,
            AWS_ACCESS_KEY_ID=f"rehearsal-{fn.function_name}",
            AWS_SECRET_ACCESS_KEY="rehearsal",
            AWS_SESSION_TOKEN="rehearsal",
            LAMBDA_TASK_ROOT=str(task),
        )
        log = tempfile.TemporaryFile()
        process = subprocess.Popen([str(task / "bootstrap")], cwd=task, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while not invocation.done.wait(0.05):
            if process.poll() is not None or time.time() > deadline:
                break
        process.kill()
        process.wait()
        server.shutdown()
        server.server_close()
        log.seek(0)
        logs = log.read().decode(errors="replace")
        if invocation.result is None:
            reason = "exited" if process.returncode is not None and time.time() <= deadline else "timed out"
            invocation.result = json.dumps({"errorType": "Runtime.ExitError", "errorMessage": f"the bootstrap {reason} without answering"}).encode()
            invocation.errored = True
        if os.environ.get("REHEARSAL_LOG_DIR"):
            with open(Path(os.environ["REHEARSAL_LOG_DIR"]) / f"{fn.function_name}.log", "a") as f:
                f.write(logs)
        return invocation.result.decode(errors="replace"), invocation.errored, logs
