#!/usr/bin/env python3
"""Helpers for tests/agent (the C tests assert on what these print).

summary FILE.json       -> "comm_id function count bytes" per (communicator, function), from `summary --json`
prom FILE.prom          -> the same from an exposition (nccl_lens_collectives_total / _bytes_total summed over ranks)
query URL COMM_IDS...   -> the same from Prometheus' HTTP query API (sum by (comm_id, function))
receiver DIR            -> an OTLP/HTTP JSON receiver on 127.0.0.1 (port in DIR/port); each POST is decoded with
                           the protobuf JSON mapping into ExportMetricsServiceRequest (DIR/otlp_metrics.proto,
                           compiled by protoc); it writes the same lines to DIR/otlp.txt and stops after one request
                           or 60 s.
"""
import collections, json, os, re, sys, urllib.parse, urllib.request

COLL_FUNCS = None  # every function except Send/Recv counts as a collective


def out(acc):
    for (cid, func), (n, b) in sorted(acc.items()):
        print(cid, func, n, b)


def summary(path):
    d = json.load(open(path))
    acc = collections.defaultdict(lambda: [0, 0])
    for c in d["communicators"]:
        cid = "0x%016x" % int(c["comm_id"], 16)  # the agent writes ids as every view (docs/cli.md)
        for op in c["ops"]:
            a = acc[(cid, op["func"])]
            if op["func"] not in ("Send", "Recv"):
                a[0] += op["count"]
            a[1] += op["bytes"]
    out(acc)


LINE = re.compile(r'^(nccl_lens_collectives_total|nccl_lens_bytes_total)\{(.*)\} (\S+)$')


def labels(s):
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', s))


def prom(path):
    acc = collections.defaultdict(lambda: [0, 0])
    for line in open(path):
        m = LINE.match(line.strip())
        if not m:
            continue
        l = labels(m.group(2))
        a = acc[(l["comm_id"], l["function"])]
        a[0 if m.group(1).endswith("collectives_total") else 1] += int(float(m.group(3)))
    out(acc)


def query(url):
    acc = collections.defaultdict(lambda: [0, 0])
    for i, metric in enumerate(("nccl_lens_collectives_total", "nccl_lens_bytes_total")):
        q = urllib.parse.urlencode({"query": "sum by (comm_id, function) (%s)" % metric})
        with urllib.request.urlopen("%s/api/v1/query?%s" % (url, q), timeout=5) as r:
            d = json.load(r)
        for s in d["data"]["result"]:
            acc[(s["metric"]["comm_id"], s["metric"]["function"])][i] += int(float(s["value"][1]))
    out(acc)


def receiver(d):
    import http.server, signal, subprocess
    subprocess.check_call(["protoc", "-I", d, "--python_out", d, os.path.join(d, "otlp_metrics.proto")])
    sys.path.insert(0, d)
    import otlp_metrics_pb2
    from google.protobuf import json_format

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status, text = 200, b"{}"
            try:
                req = json_format.Parse(body, otlp_metrics_pb2.ExportMetricsServiceRequest())
                acc = collections.defaultdict(lambda: [0, 0])
                kinds = set()
                for rm in req.resource_metrics:
                    for sm in rm.scope_metrics:
                        for m in sm.metrics:
                            kinds.add(m.WhichOneof("data"))
                            if m.name not in ("nccl_lens_collectives_total", "nccl_lens_bytes_total"):
                                continue
                            assert m.sum.is_monotonic and m.sum.aggregation_temporality == 2
                            for p in m.sum.data_points:
                                a = {kv.key: kv.value.string_value for kv in p.attributes}
                                acc[(a["comm_id"], a["function"])][0 if "collectives" in m.name else 1] += p.as_int
                with open(os.path.join(d, "otlp.txt"), "w") as f:
                    f.write("path %s\nheader %s\nkinds %s\n" % (self.path, self.headers.get("x-lens-test"),
                                                                 ",".join(sorted(kinds))))
                    for (cid, func), (n, b) in sorted(acc.items()):
                        f.write("%s %s %d %d\n" % (cid, func, n, b))
            except Exception as e:  # the test fails on the missing file and reads why here
                status, text = 400, str(e).encode()
                open(os.path.join(d, "otlp_error.txt"), "w").write(str(e))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(text)

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    signal.alarm(60)  # bounded: never outlives the test
    with open(os.path.join(d, "port.tmp"), "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
    srv.handle_request()


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "summary":
        summary(sys.argv[2])
    elif cmd == "prom":
        prom(sys.argv[2])
    elif cmd == "query":
        query(sys.argv[2])
    elif cmd == "receiver":
        receiver(sys.argv[2])
