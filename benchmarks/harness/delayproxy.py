"""delayproxy: a loopback TCP proxy that adds a delay each way and counts the HTTP requests it carries.

Why: this kernel has no netem, so a round-trip latency to the S3 server (:mod:`.s3server`) is made
here: every chunk read from one side is written to the other ``delay_ms`` later (each direction has
its own queue, so the delay is added without limiting throughput: a connection's bytes keep flowing
while earlier ones wait). A request then costs at least ``2 * delay_ms`` more than it did direct.

Counting: the client-to-server stream of each connection is parsed as HTTP/1.1 (request line,
headers, a body of ``Content-Length`` bytes), so ``requests`` holds how many requests of each
method went through, ``operations`` how many of each S3 operation (a ``CopyObject`` is a PUT
with ``x-amz-copy-source``: :func:`s3_operation`), and ``log`` each ``(method, path)``: what a test asserts "one GET and no HEAD
per file" with, across every process that goes through the proxy. A stream that is not HTTP (or is
chunked) stops being parsed and is counted in ``unparsed``.

Holding: ``hold(predicate)`` keeps every request for which ``predicate(method, path, headers)`` is
true from reaching the server (its connection stalls there) until :meth:`release`: what a test
asserts "the first item arrived while these reads had not been answered" with, without a clock.

    with DelayProxy(("127.0.0.1", s3.port), delay_ms=10) as proxy:
        endpoint = proxy.endpoint        # http://127.0.0.1:PORT
        ...
        proxy.requests["GET"], proxy.requests["HEAD"]
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import time
from typing import Any

__all__ = ["DelayProxy", "s3_operation"]

_CHUNK = 1 << 16


class _HttpCounter:
    """Parses one connection's client-to-server bytes as HTTP requests, counting them."""

    def __init__(self, proxy: DelayProxy) -> None:
        self.proxy, self.buf, self.body_left, self.broken = proxy, b"", 0, False
        self.held = False  # a request in the bytes fed last is held (:meth:`DelayProxy.hold`)

    def feed(self, data: bytes) -> None:
        if self.broken:
            return
        while data:
            if self.body_left:
                n = min(self.body_left, len(data))
                self.body_left -= n
                data = data[n:]
                continue
            self.buf += data
            data = b""
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > 1 << 20:
                    self._give_up()
                return
            head, data, self.buf = self.buf[:end], self.buf[end + 4 :], b""
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3 or not parts[2].startswith("HTTP/"):
                self._give_up()
                return
            headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
            copy = "x-amz-copy-source" in headers
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self.proxy.record(parts[0], parts[1], copy=copy)
                self._give_up()
                return
            self.proxy.record(parts[0], parts[1], copy=copy)
            hold = self.proxy.holding
            if hold is not None and hold(parts[0], parts[1], headers):
                self.held = True
                with self.proxy.lock:
                    self.proxy.held.append((parts[0], parts[1]))
            try:
                self.body_left = int(headers.get("content-length", "0") or 0)
            except ValueError:
                self._give_up()
                return

    def _give_up(self) -> None:
        self.broken = True
        self.buf = b""
        with self.proxy.lock:
            self.proxy.unparsed += 1


def s3_operation(method: str, path: str, *, copy: bool = False) -> str:
    """The S3 API operation an HTTP request is (path-style addressing): ``ListObjectsV2``,
    ``GetObject``, ``HeadObject``, ``HeadBucket``, ``PutObject``, ``CopyObject``, ``UploadPart``,
    ``CreateMultipartUpload``, ``CompleteMultipartUpload``, ``DeleteObject``, ``DeleteObjects``, ...;
    ``<METHOD>`` for anything else."""
    target, _, query = path.partition("?")
    keys = {q.partition("=")[0] for q in query.split("&") if q}
    on_object = target.strip("/").count("/") >= 1
    if method == "GET":
        if "list-type" in keys:
            return "ListObjectsV2"
        return "GetObject" if on_object else "ListObjects"
    if method == "HEAD":
        return "HeadObject" if on_object else "HeadBucket"
    if method == "PUT":
        if copy:
            return "UploadPartCopy" if "partNumber" in keys else "CopyObject"
        if "partNumber" in keys:
            return "UploadPart"
        return "PutObject" if on_object else "CreateBucket"
    if method == "POST":
        if "delete" in keys:
            return "DeleteObjects"
        if "uploads" in keys:
            return "CreateMultipartUpload"
        if "uploadId" in keys:
            return "CompleteMultipartUpload"
    if method == "DELETE":
        if "uploadId" in keys:
            return "AbortMultipartUpload"
        return "DeleteObject" if on_object else "DeleteBucket"
    return method


class DelayProxy:
    """Forwards 127.0.0.1:``port`` to *target*, each direction ``delay_ms`` late; counts requests.

    Runs an asyncio loop in a daemon thread; use as a context manager or call :meth:`close`."""

    def __init__(self, target: tuple[str, int], delay_ms: float = 0.0, *, port: int = 0) -> None:
        self.target, self.delay = target, delay_ms / 1000.0
        self.lock = threading.Lock()
        self.requests: collections.Counter[str] = collections.Counter()
        self.log: list[tuple[str, str]] = []
        self.operations: collections.Counter[str] = collections.Counter()  # S3 operation name -> count
        self.op_log: list[tuple[str, str]] = []  # (S3 operation, path without its query), in order
        self.unparsed = 0
        self.connections = 0
        self.holding: Any = None  # predicate(method, path, headers) of the requests held back (hold())
        self.held: list[tuple[str, str]] = []  # (method, path) of the requests held back so far
        self._gate: asyncio.Event | None = None
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(port,), name="delayproxy", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        assert self._server is not None
        self.port: int = self._server.sockets[0].getsockname()[1]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def record(self, method: str, path: str, *, copy: bool = False) -> None:
        op = s3_operation(method, path, copy=copy)
        with self.lock:
            self.requests[method] += 1
            self.operations[op] += 1
            self.log.append((method, path))
            self.op_log.append((op, path.partition("?")[0]))

    def reset(self) -> None:
        """Forget the requests counted so far."""
        with self.lock:
            self.requests.clear()
            self.operations.clear()
            self.log.clear()
            self.op_log.clear()
            self.unparsed = 0

    def hold(self, predicate: Any) -> None:
        """Hold back every later request for which ``predicate(method, path, headers)`` is true
        (headers lower-cased) until :meth:`release`."""

        async def arm() -> None:
            self._gate = asyncio.Event()

        asyncio.run_coroutine_threadsafe(arm(), self._loop).result(10)
        self.holding = predicate

    def release(self) -> None:
        """Let the held requests (and any later ones) through."""
        self.holding = None
        gate = self._gate
        if gate is not None:
            self._loop.call_soon_threadsafe(gate.set)

    def counts(self) -> dict[str, int]:
        with self.lock:
            return dict(self.requests)

    # -- the loop ---------------------------------------------------------------------------------
    def _run(self, port: int) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", port))
        except BaseException as exc:  # reported by __init__
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.close()

    async def _serve(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        with self.lock:
            self.connections += 1
        try:
            sreader, swriter = await asyncio.open_connection(*self.target)
        except OSError:
            cwriter.close()
            return
        counter = _HttpCounter(self)
        await asyncio.gather(
            self._pump(creader, swriter, counter), self._pump(sreader, cwriter, None), return_exceptions=True
        )

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, inspect: Any) -> None:
        """Read from *reader*, write each chunk to *writer* ``delay`` later (in order, without
        holding the reads back)."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            try:
                while True:
                    due, data = await queue.get()
                    if not data:
                        break
                    wait = due - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                with contextlib.suppress(Exception):
                    if writer.can_write_eof():
                        writer.write_eof()
                    else:
                        writer.close()

        sender = asyncio.ensure_future(send())
        try:
            while True:
                data = await reader.read(_CHUNK)
                if inspect is not None and data:
                    inspect.feed(data)
                    if inspect.held:  # (hold()): this request waits for release()
                        inspect.held = False
                        if self._gate is not None:
                            await self._gate.wait()
                queue.put_nowait((time.monotonic() + self.delay, data))
                if not data:
                    break
        except (ConnectionError, OSError):
            queue.put_nowait((0.0, b""))
        await sender
        with contextlib.suppress(Exception):
            writer.close()

    def close(self) -> None:
        """Stop listening and end the loop's thread (open connections are dropped)."""
        if not self._loop.is_closed() and self._loop.is_running():

            async def shut() -> None:
                # the connections' tasks are cancelled: their end is no error worth a log line
                self._loop.set_exception_handler(lambda loop, context: None)
                if self._server is not None:
                    self._server.close()
                for task in asyncio.all_tasks():
                    if task is not asyncio.current_task():
                        task.cancel()

            asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> DelayProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
