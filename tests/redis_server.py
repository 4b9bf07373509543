"""A real, throw-away ``redis-server`` on a free loopback port (tests and benchmarks).

Used by tests/test_redis.py, tests/test_scrapy.py and benchmarks/bench_redis.py.
The server keeps nothing on disk (no RDB, no AOF) and dies with the context.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_redis(extra_args=(), executable=None):
    """Start ``redis-server``; yield its ``redis://127.0.0.1:PORT/0`` URL; stop it afterwards."""
    import redis

    executable = executable or shutil.which("redis-server")
    if executable is None:
        raise FileNotFoundError("redis-server is not installed (apt-get install -y redis-server)")
    port = free_port()
    with tempfile.TemporaryDirectory() as workdir:
        process = subprocess.Popen(
            [
                executable,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                workdir,
                *extra_args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url)
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"redis-server did not start: {process.stderr.read().decode()}") from None
                    time.sleep(0.05)
            yield url
        finally:
            client.close()
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stderr.close()


class RestartableRedis:
    """A ``redis-server`` on a fixed loopback port that a test can kill (SIGKILL) and start again.

    ``extra_args`` choose persistence, e.g. ``("--appendonly", "yes", "--appendfsync", "always")``;
    the data directory outlives a kill, so a restart reloads whatever the server persisted.
    """

    def __init__(self, workdir, extra_args=(), executable=None):
        self.executable = executable or shutil.which("redis-server")
        if self.executable is None:
            raise FileNotFoundError("redis-server is not installed (apt-get install -y redis-server)")
        self.workdir, self.extra_args = str(workdir), tuple(extra_args)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None

    def start(self) -> None:
        import redis

        args = ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(
            [self.executable, *args, "--dir", self.workdir, *self.extra_args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    client.ping()
                    return
                except redis.exceptions.BusyLoadingError:
                    time.sleep(0.05)  # replaying its AOF
                except redis.ConnectionError:
                    if self.process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"redis-server on port {self.port} did not start") from None
                    time.sleep(0.05)
        finally:
            client.close()

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill: the server gets no chance to persist anything more."""
        self.process.kill()
        self.process.wait()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()
