"""A fake api.anthropic.com and platform.claude.com for run_test's agent tests (host side,
loopback only).

Usage: python3 fake_anthropic.py CERT KEY LOG [HOLD]
With HOLD (a path), each POST /v1/messages is answered only once that file exists, so a test
can look at the client while its request has been sent and its answer not yet received.
Serves HTTPS on 127.0.0.1 at a kernel-chosen port, prints "LISTENING <port>" once ready,
and appends one line per request to LOG, "request sni=SNI method=METHOD path=PATH
bytes=N host=HOST key=X-API-KEY auth=AUTHORIZATION" (spaces in it as +; the server name the client sent in its ClientHello, "-" for none), or
"handshake-error sni=SNI error=TEXT". POST /v1/messages gets a minimal valid reply
(server-sent events when the request asks to stream) whose text is REPLY_TEXT; the
token-counting endpoint gets a count; the reachability checks Claude Code makes before its
first screen (/api/hello, /v1/oauth/hello) get 200; everything else gets a 404 JSON error. Runs until
killed; every connection is served on its own thread.
"""

import http.server
import json
import os
import socketserver
import ssl
import sys
import threading
import time

REPLY_TEXT = "sbx-fake-reply: hello from the fake api.anthropic.com"


class State:
    lock = threading.Lock()
    log_path = ""
    hold_path = ""


def wait_for_release():
    deadline = time.monotonic() + 120
    while State.hold_path and not os.path.exists(State.hold_path):
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)


def record(kind, tls_socket, **fields):
    sni = getattr(tls_socket, "sbx_sni", None) or "-"
    line = " ".join([kind, f"sni={sni}"] + [f"{k}={v}" for k, v in fields.items()])
    with State.lock, open(State.log_path, "a", encoding="utf-8") as log:
        log.write(line.replace("\n", " ") + "\n")


def message(model):
    return {
        "id": "msg_sbxfake0001",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": REPLY_TEXT}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 9},
    }


def stream_events(model):
    start = message(model)
    start["content"] = []
    start["stop_reason"] = None
    start["usage"] = {"input_tokens": 5, "output_tokens": 1}
    return [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("ping", {"type": "ping"}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": REPLY_TEXT}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet: the LOG file is the record
        pass

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def send_json(self, status, document):
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_sbxfake")
        self.end_headers()
        self.wfile.write(data)

    def send_stream(self, model):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("request-id", "req_sbxfake")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in stream_events(model):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True

    def handle_any(self):
        body = self.read_body()
        record("request", self.connection, method=self.command, path=self.path,
               bytes=len(body), host=self.headers.get("Host", "-"),
               key=self.headers.get("x-api-key", "-"),
               auth=(self.headers.get("Authorization") or "-").replace(" ", "+"))
        path = self.path.split("?", 1)[0]
        try:
            request = json.loads(body) if body else {}
        except ValueError:
            request = {}
        model = request.get("model", "claude-sbx-fake") if isinstance(request, dict) else ""
        if self.command == "POST" and path == "/v1/messages":
            wait_for_release()
            if request.get("stream"):
                self.send_stream(model)
            else:
                self.send_json(200, message(model))
        elif self.command == "POST" and path == "/v1/messages/count_tokens":
            self.send_json(200, {"input_tokens": 5})
        elif self.command == "GET" and path in ("/api/hello", "/v1/oauth/hello"):
            self.send_json(200, {"message": "hello"})
        else:
            self.send_json(404, {"type": "error", "error": {
                "type": "not_found_error", "message": "not served by the fake"}})

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def __init__(self, context):
        super().__init__(("127.0.0.1", 0), Handler)
        self.context = context

    def get_request(self):
        sock, address = self.socket.accept()
        tls = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return tls, address

    def finish_request(self, request, client_address):
        # The handshake runs on the connection's own thread, so a client that never
        # finishes it blocks only itself.
        try:
            request.settimeout(30)
            request.do_handshake()
        except (ssl.SSLError, OSError) as error:
            record("handshake-error", request, error=error)
            return
        super().finish_request(request, client_address)


def main():
    cert, key, State.log_path = sys.argv[1:4]
    State.hold_path = sys.argv[4] if len(sys.argv) > 4 else ""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])

    def remember_sni(tls_socket, server_name, _context):
        tls_socket.sbx_sni = server_name

    context.sni_callback = remember_sni
    server = Server(context)
    print(f"LISTENING {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
