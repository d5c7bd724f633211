"""An OTLP/HTTP trace collector on loopback, in a thread: it decodes what exporters send to
``/v1/traces`` (protobuf, as the OTLP exporter sends it) and keeps the spans."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class OtlpCollector:
    def __init__(self) -> None:
        self.spans: list = []  # opentelemetry.proto.trace.v1.Span, with .service added
        self.refused: list[str] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces" or "protobuf" not in self.headers["Content-Type"]:
                    collector.refused.append(f"{self.path} {self.headers['Content-Type']}")
                    self.send_response(404)
                    self.end_headers()
                    return
                collector.receive(ExportTraceServiceRequest.FromString(body))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._lock = threading.Lock()

    def receive(self, request: ExportTraceServiceRequest) -> None:
        with self._lock:
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    self.spans.extend(scope.spans)

    def __enter__(self) -> OtlpCollector:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
