"""A stand-in for DynamoDB that keeps connections alive (as DynamoDB does, and moto does not):
answers every request with `{}`, an empty UpdateItem result. For bench/examples/limiter_cost.rs,
and as the OTLP collector of bench/run's endpoint-traced (an OTLP/HTTP export only needs a 200).

Usage: python3 bench/fake_dynamodb.py PORT
"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1  # headers and body in one write: no delayed-ACK stall per answer

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b"{}"
        self.send_response(200)
        self.send_header("content-type", "application/x-amz-json-1.0")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
