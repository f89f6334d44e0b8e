#!/usr/bin/env python3
"""Network peers for tests/agent/test_agent_hardening.c, all on 127.0.0.1,
each bounded by an alarm so none outlives its test.

stuck DIR               -> an OTLP collector that accepts and never answers; DIR/port, then DIR/accepted once one
                           connection came
collector DIR SPEC      -> an OTLP/HTTP receiver answering in turn the statuses of SPEC ("503:1,200": 503 with
                           Retry-After: 1, then 200; "503:+2": Retry-After an HTTP date 2 s ahead; the last repeats); per request a line "<monotonic s> <status>
                           <json ok|bad> <gzip|plain>" in DIR/requests.txt, and the "comm" attribute values seen in
                           DIR/comms.json
get URL CA [user pass [cert key]] -> one HTTPS GET; prints the status, then the headers (lower-case name: value)
"""
import gzip, json, os, signal, socket, sys, time


def write_port(d, port):
    with open(os.path.join(d, "port.tmp"), "w") as f:
        f.write(str(port))
    os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))


def stuck(d):
    signal.alarm(60)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    write_port(d, s.getsockname()[1])
    held = []
    while True:
        c, _ = s.accept()
        held.append(c)  # never read, never answered, never closed
        if len(held) == 1:
            open(os.path.join(d, "accepted"), "w").write("1\n")


def collector(d, spec):
    import http.server
    signal.alarm(60)
    plan = spec.split(",")
    state = {"i": 0}

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            enc = "plain"
            if self.headers.get("Content-Encoding") == "gzip":
                enc = "gzip"
                body = gzip.decompress(body)
            ok = "bad"
            try:
                doc = json.loads(body.decode("utf-8"))
                ok = "ok"
                comms = []
                for rm in doc["resourceMetrics"]:
                    for sm in rm["scopeMetrics"]:
                        for m in sm["metrics"]:
                            for kind in ("sum", "gauge", "histogram"):
                                for p in m.get(kind, {}).get("dataPoints", []):
                                    for a in p.get("attributes", []):
                                        if a["key"] in ("comm", "function"):
                                            comms.append([a["key"], a["value"]["stringValue"]])
                json.dump(comms, open(os.path.join(d, "comms.json"), "w"))
            except Exception as e:
                open(os.path.join(d, "json_error.txt"), "w").write(repr(e))
            step = plan[min(state["i"], len(plan) - 1)]
            state["i"] += 1
            status, _, retry = step.partition(":")
            with open(os.path.join(d, "requests.txt"), "a") as f:
                f.write("%.3f %s %s %s\n" % (time.monotonic(), status, ok, enc))
            self.send_response(int(status))
            if retry.startswith("+"):  # "+N": an HTTP date N s ahead
                import email.utils
                self.send_header("Retry-After", email.utils.formatdate(time.time() + int(retry[1:]), usegmt=True))
            elif retry:
                self.send_header("Retry-After", retry)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    write_port(d, srv.server_address[1])
    srv.serve_forever()


def get(url, ca, user=None, pw=None, cert=None, key=None):
    import base64, ssl, urllib.request, urllib.error
    ctx = ssl.create_default_context(cafile=ca)
    if cert:
        ctx.load_cert_chain(cert, key)
    req = urllib.request.Request(url)
    if user is not None:
        req.add_header("Authorization", "Basic " + base64.b64encode(("%s:%s" % (user, pw)).encode()).decode())
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
            status, headers = r.status, r.headers
    except urllib.error.HTTPError as e:
        status, headers = e.code, e.headers
    except Exception as e:  # a refused handshake
        print("error", type(e).__name__)
        return
    print(status)
    for k, v in headers.items():
        print("%s: %s" % (k.lower(), v))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "stuck":
        stuck(sys.argv[2])
    elif cmd == "collector":
        collector(sys.argv[2], sys.argv[3])
    elif cmd == "get":
        get(*sys.argv[2:])
