"""Real servers on 127.0.0.1 for the remote-input tests (test_remote.py) and
the bench: each serves a directory of its own, on a free port, and is stopped
(its whole process group killed) when its `with` block ends, however it ends.

- nginx(root): static files over HTTP and HTTPS (a self-signed certificate
  for 127.0.0.1/localhost, `cert` to pass as AWS_CA_BUNDLE); range requests
  as nginx serves them; `requests()` parses its access log.
- s3(root): s3rver (tests/e2e/s3), which verifies AWS Signature V4 (the
  credentials S3_KEY_ID / S3_SECRET, or S3RVER / S3RVER, or temporary ones
  from `issue()` with their session token, until they expire), buckets "bkt"
  and "public"; an unsigned request is refused (403) but a read of "public".
- faults(root): a threaded Python server over `root` that misbehaves on
  purpose, chosen by the URL's first path element (/403/, /404/, /429/,
  /500/, /500once/, /drop/, /truncate/, /stall/, /trickle/) or by `fault()`
  (that and /silent/: connections accepted and never answered), and counts
  requests and bytes. trickle sends the headers, then 2 bytes a second. drop sends half the body and resets the connection;
  truncate sends all but the last byte and closes it cleanly; whole
  answers with the whole file (HTTP 200), whatever the Range. Files carry an
  ETag ("v1"); changed answers as the file replaced (ETag "v2", FILE.v2
  when there is one, else every byte inverted; 412 to an If-Match of "v1").
  `validators()` changes what it sends and honours, as servers differ: a
  weak ETag, none, a Last-Modified (one second later for v2), If-Match
  ignored, Range ignored (the whole file, HTTP 200).
- python_http(root): Python's own `python3 -m http.server`, which answers
  every request with the whole file, as some simple servers and CDNs do.
- s3_proxy(s3): a proxy in front of s3rver that answers chosen requests with 500, or passes them on and
  changes the ETag of the answer (the upload tests).
- unreachable(): a URL on a port that nothing listens on.

Every server has `put(file, key)`, which publishes a local file under `key`
and returns its http:// URL, and `url(key)`.

Run as a script (python3 servers.py nginx|s3|faults DIR) it starts one and
prints its URL(s) until interrupted, for the bench and for trying things out.
"""
import contextlib
import datetime
import hashlib
import hmac
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
S3_DIR = os.path.join(HERE, "s3")
NGINX = os.environ.get("MB_NGINX", shutil.which("nginx") or "/usr/sbin/nginx")

# Credentials s3rver accepts: its own S3RVER / S3RVER, and these, given to it by
# s3/start.js, whose secret is a string that appears nowhere else (the tests
# look for it in microbatch's output).
S3_KEY_ID = "AKIAMBTEST0000000001"
S3_SECRET = "mbTest/Secret+0123456789abcdefghijKLMNOP"
S3_BUCKET = "bkt"
S3_PUBLIC_BUCKET = "public"  # anonymous reads allowed, as a public bucket's (s3/start.js)

# The machine's own AWS settings never reach a run: no AWS_* variable of its own, shared files that do not exist,
# and the instance metadata service at a loopback port where nothing listens (AWS's link-local address is no
# test's target). A test that wants any of them gives its own.
AWS_ISOLATED = {"AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/mb-test/aws/credentials",
                "AWS_CONFIG_FILE": "/nonexistent/mb-test/aws/config",
                "AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://127.0.0.1:9/"}


def aws_isolated(env):
    """`env` without the machine's AWS settings (AWS_ISOLATED)."""
    out = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    out.update(AWS_ISOLATED)
    return out


def temporary_key(i):
    """The i-th temporary key pair s3/start.js knows (i < 64): ("ASIATEMP00000i", its secret)."""
    return f"ASIATEMP{i:06d}", f"temporary/secret+{i:06d}"


def free_port():
    """A port nothing listens on right now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc=None, timeout=120, what="server"):
    """Returns once something accepts connections on `port`; fails when `proc` exits first."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} not listening on {port} after {timeout} s")
            time.sleep(0.05)


def stop_group(proc, grace=5):
    """Ends `proc` and everything it started (it leads its own session): TERM, then KILL."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=grace)


@contextlib.contextmanager
def process_group(args, **kwargs):
    """Popen in a session of its own, stopped (the whole group) on leaving the block."""
    proc = subprocess.Popen(args, start_new_session=True, stdin=subprocess.DEVNULL, **kwargs)
    try:
        yield proc
    finally:
        stop_group(proc)


def make_cert(directory):
    """A self-signed certificate for 127.0.0.1 and localhost (subjectAltName); returns (cert, key)."""
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def under(entries, prefix):
    """The request log entries whose URI starts with `prefix` (all when None)."""
    if prefix is None:
        return entries
    prefix = "/" + prefix.lstrip("/")
    return [e for e in entries if e["uri"].startswith(prefix)]


class Server:
    """What every server offers: a root directory, a base URL, put() and url(); those that count what they
    serve, requests(prefix) and bytes_sent(prefix)."""
    root = None
    base = None

    def bytes_sent(self, prefix=None):
        return sum(e["bytes"] for e in self.requests(prefix))

    def url(self, key):
        return f"{self.base}/{key.lstrip('/')}"

    def put(self, file, key):
        """Publishes the local `file` as `key` (copied into the served directory); returns its URL."""
        target = os.path.join(self.root, key.lstrip("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(file, target)
        return self.url(key)

    def put_dir(self, directory, prefix):
        """Every file of `directory` (not recursive) under `prefix`/; returns the URL of `prefix`."""
        for name in sorted(os.listdir(directory)):
            if os.path.isfile(os.path.join(directory, name)):
                self.put(os.path.join(directory, name), f"{prefix.strip('/')}/{name}")
        return self.url(prefix.strip("/"))


# --- nginx -------------------------------------------------------------------

# One JSON object per request: what the tests and the bench count.
NGINX_LOG_FORMAT = ('{"method":"$request_method","uri":"$request_uri","status":$status,'
                    '"range":"$http_range","bytes":$body_bytes_sent,"port":$server_port}')

NGINX_CONF = """# written by tests/e2e/servers.py
{user}
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 256; }}
http {{
    default_type application/octet-stream;
    types {{ application/json json; }}
    log_format mb escape=json '{log_format}';
    access_log {dir}/access.log mb;
    client_body_temp_path {dir}/tmp/body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;
    sendfile on;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{http_port};
        root {root};
    }}
    server {{
        listen 127.0.0.1:{https_port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {root};
    }}
}}
"""


class Nginx(Server):
    """nginx over `root`: `base` (http://), `https_base`, `cert` (the CA file for AWS_CA_BUNDLE)."""

    def __init__(self, root, state):
        self.root, self.state = root, state
        self.cert, self.key = make_cert(state)
        self.http_port, self.https_port = free_port(), free_port()
        self.base = f"http://127.0.0.1:{self.http_port}"
        self.https_base = f"https://127.0.0.1:{self.https_port}"
        self.log = os.path.join(state, "access.log")
        os.makedirs(os.path.join(state, "tmp"), exist_ok=True)
        self.conf = os.path.join(state, "nginx.conf")
        # Workers run as nobody unless told otherwise; a root-owned 0700 temp dir needs root.
        user = "user root;" if os.geteuid() == 0 else ""
        with open(self.conf, "w") as f:
            f.write(NGINX_CONF.format(user=user, dir=state, root=root, http_port=self.http_port,
                                      https_port=self.https_port, cert=self.cert, key=self.key,
                                      log_format=NGINX_LOG_FORMAT))

    def https_url(self, key):
        return f"{self.https_base}/{key.lstrip('/')}"

    def requests(self, prefix=None):
        """The access log's entries so far (dicts: method, uri, status, range, bytes, port), oldest first;
        only those whose URI starts with `prefix` when given."""
        entries = []
        with contextlib.suppress(FileNotFoundError), open(self.log) as f:
            for line in f:
                if line.strip():
                    entries.append(json.loads(line))
        return under(entries, prefix)


@contextlib.contextmanager
def nginx(root=None):
    """Starts nginx over `root` (a new temp dir when None); yields a Nginx."""
    with tempfile.TemporaryDirectory(prefix="mb-nginx-") as state:
        if root is None:
            root = os.path.join(state, "www")
            os.makedirs(root)
        server = Nginx(os.path.abspath(root), state)
        errors = open(os.path.join(state, "stderr.log"), "w")
        with errors, process_group([NGINX, "-p", state, "-e", os.path.join(state, "error.log"), "-c", server.conf,
                                    "-g", "daemon off;"], stdout=errors, stderr=errors) as proc:
            try:
                wait_for_port(server.http_port, proc, what="nginx")
                wait_for_port(server.https_port, proc, what="nginx")
            except RuntimeError as e:
                raise RuntimeError(f"{e}: {open(os.path.join(state, 'error.log')).read()}") from None
            server.proc = proc
            yield server


# --- s3rver ------------------------------------------------------------------

class S3(Server):
    """s3rver: `base` is the endpoint (AWS_ENDPOINT_URL); keys live in bucket "bkt"."""

    def __init__(self, root, port, tokens):
        self.root, self.port, self.tokens = root, port, tokens
        self.issued = 0
        self.lock = threading.Lock()
        self.endpoint = f"http://127.0.0.1:{port}"
        self.base = f"{self.endpoint}/{S3_BUCKET}"  # path-style URLs of the bucket's objects

    def s3_url(self, key, bucket=S3_BUCKET):
        return f"s3://{bucket}/{key.lstrip('/')}"

    def env(self, base, signed=True, key_id=S3_KEY_ID, secret=S3_SECRET, token=None):
        """`base` (an environment dict) for s3:// URLs of this server: endpoint, region, credentials."""
        env = aws_isolated(base)
        env.update(AWS_ENDPOINT_URL=self.endpoint, AWS_REGION="us-east-1")
        if signed:
            env.update(AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret)
        if token is not None:
            env["AWS_SESSION_TOKEN"] = token
        return env

    def uploads_in_progress(self, prefix="", bucket=S3_BUCKET):
        """The keys under `prefix` of the multipart uploads started and neither completed nor aborted. s3rver
        makes an upload's directory before its "key" file and removes the file before the directory: one
        found without it is being made or removed, and is looked at again until it is one or the other."""
        directory = os.path.join(self.root, bucket, "._S3rver_uploads")
        keys = []
        for upload in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
            key = os.path.join(directory, upload, "key")
            deadline = time.monotonic() + 30
            while not os.path.exists(key) and os.path.isdir(os.path.dirname(key)):
                assert time.monotonic() < deadline, f"{upload}: an upload neither made nor removed for 30 s"
                time.sleep(0.01)
            try:
                with open(key) as f:
                    keys.append(f.read())
            except FileNotFoundError:  # removed meanwhile
                pass
        return [k for k in keys if k.startswith(prefix)]

    def issue(self, lifetime=3600):
        """Temporary credentials this server accepts until `lifetime` seconds from now (a fresh key pair of
        temporary_key's and a new session token each time): {"AccessKeyId", "SecretAccessKey", "Token",
        "Expiration"}, as the metadata endpoints serve them."""
        with self.lock:
            key_id, secret = temporary_key(self.issued % 64)
            self.issued += 1
            token = f"mbSession/{self.issued:04d}+" + hashlib.sha256(os.urandom(16)).hexdigest()
            expires = time.time() + lifetime
            with open(self.tokens) as f:
                tokens = json.load(f)
            tokens[key_id] = {"token": token, "expires": expires}
            with open(self.tokens + ".new", "w") as f:
                json.dump(tokens, f)
            os.replace(self.tokens + ".new", self.tokens)  # s3/start.js reads it whole or not at all
        stamp = datetime.datetime.fromtimestamp(expires, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"AccessKeyId": key_id, "SecretAccessKey": secret, "Token": token, "Expiration": stamp}

    def presign(self, key, expires=3600, secret=S3_SECRET, token=None):
        """A presigned GET URL of `key` (SigV4 in the query, as `aws s3 presign` makes them; with
        X-Amz-Security-Token when `token` is given, as temporary credentials make them)."""
        url = urllib.parse.urlsplit(self.url(key))
        now = datetime.datetime.now(datetime.timezone.utc)
        stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        scope = f"{day}/us-east-1/s3/aws4_request"
        query = {"X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Credential": f"{S3_KEY_ID}/{scope}",
                 "X-Amz-Date": stamp, "X-Amz-Expires": str(expires), "X-Amz-SignedHeaders": "host"}
        if token is not None:
            query["X-Amz-Security-Token"] = token
        quoted = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                          for k, v in sorted(query.items()))
        canonical = "\n".join(["GET", urllib.parse.quote(url.path, safe="/-_.~"), quoted, f"host:{url.netloc}", "",
                               "host", "UNSIGNED-PAYLOAD"])
        to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        k = ("AWS4" + secret).encode()
        for part in (day, "us-east-1", "s3", "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
        return f"{url.scheme}://{url.netloc}{url.path}?{quoted}&X-Amz-Signature={signature}"

    def put(self, file, key, bucket=S3_BUCKET):
        """Uploads `file` as `key` of `bucket` with a signed PUT (curl's SigV4); returns its path-style URL."""
        url = f"{self.endpoint}/{bucket}/{key.lstrip('/')}"
        res = subprocess.run(["curl", "-sS", "--fail-with-body", "--aws-sigv4", "aws:amz:us-east-1:s3",
                              "-u", f"{S3_KEY_ID}:{S3_SECRET}", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
                              "-T", file, url], capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            raise RuntimeError(f"upload of {file} to {url} failed: {res.stderr} {res.stdout}")
        return url


def s3_installed():
    return os.path.isdir(os.path.join(S3_DIR, "node_modules", "@20minutes", "s3rver"))


@contextlib.contextmanager
def s3(root=None):
    """Starts s3rver over `root` (a new temp dir when None); yields an S3."""
    if not s3_installed():
        raise RuntimeError(f"s3rver is not installed: npm ci --prefix {S3_DIR} (scripts/install-deps.sh)")
    with tempfile.TemporaryDirectory(prefix="mb-s3-") as state:
        root = os.path.abspath(root or os.path.join(state, "data"))
        os.makedirs(root, exist_ok=True)
        port = free_port()
        tokens = os.path.join(state, "tokens.json")
        with open(tokens, "w") as f:
            f.write("{}")
        log = open(os.path.join(state, "s3rver.log"), "w+")
        with log, process_group(["node", os.path.join(S3_DIR, "start.js"), str(port), root, S3_KEY_ID, S3_SECRET,
                                 tokens],
                                stdout=subprocess.PIPE, stderr=log, text=True) as proc:
            line = proc.stdout.readline()  # "ready", or nothing when it failed
            if line.strip() != "ready":
                proc.wait(timeout=10)
                log.seek(0)
                raise RuntimeError(f"s3rver did not start: {line} {log.read()}")
            wait_for_port(port, proc, what="s3rver")
            server = S3(root, port, tokens)
            server.proc = proc
            yield server


# --- the faulty server -------------------------------------------------------

DEFAULT_STYLE = {"etag": "strong", "last_modified": False, "if_match": True, "ranges": True}
FAULTS = ("403", "404", "429", "500", "500once", "drop", "truncate", "stall", "silent", "changed", "trickle",
          "whole")


class Fault:
    """A misbehaviour: `mode` (one of FAULTS), after `after` good requests, for `times` requests (None: forever)."""

    def __init__(self, mode, after=0, times=None):
        assert mode in FAULTS, mode
        self.mode, self.after, self.times = mode, after, times
        self.seen = 0

    def fires(self):
        """Counts one request; True when this one misbehaves."""
        self.seen += 1
        if self.seen <= self.after:
            return False
        return self.times is None or self.seen - self.after <= self.times


def parse_range(header, size):
    """(begin, end) of a single "bytes=" range, end exclusive; None for no header or what is not a range;
    "bad" when it cannot be satisfied."""
    if not header or not header.startswith("bytes=") or "," in header:
        return None
    first, _, last = header[len("bytes="):].strip().partition("-")
    try:
        if first == "":
            n = int(last)
            return (max(size - n, 0), size) if n > 0 else "bad"
        begin = int(first)
        end = min(int(last) + 1, size) if last else size
    except ValueError:
        return None
    return (begin, end) if begin < size and begin < end else "bad"


class FaultHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server
    server_version = "faults"

    def log_message(self, *args):
        pass

    def handle(self):
        owner = self.server.owner
        if owner.next_connection_fault() == "silent":  # accept the connection and never answer, not even read
            owner.record({"method": "", "uri": "", "status": 0, "range": "", "bytes": 0, "fault": "silent"})
            owner.stopping.wait(owner.stall_seconds)
            return
        with contextlib.suppress(ConnectionError):
            super().handle()

    def do_HEAD(self):
        self.answer(head=True)

    def do_GET(self):
        self.answer(head=False)

    def answer(self, head):
        owner = self.server.owner
        path = urllib.parse.urlsplit(self.path).path
        parts = path.lstrip("/").split("/", 1)
        prefixed = parts[0] in FAULTS
        key = parts[1] if prefixed and len(parts) > 1 else path.lstrip("/")
        mode = owner.choose(path, parts[0] if prefixed else None)
        entry = {"method": self.command, "uri": self.path, "status": 0, "range": self.headers.get("Range", ""),
                 "bytes": 0, "fault": mode}
        owner.record(entry)  # now, not once answered: a stalled answer counts while it stalls
        self.respond(entry, mode, os.path.join(owner.root, urllib.parse.unquote(key)), head)

    def status_only(self, entry, code):
        body = f"{code}\n".encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        entry["status"] = code

    def respond(self, entry, mode, file, head):
        if mode == "silent":  # the request read, never answered
            self.server.owner.stopping.wait(self.server.owner.stall_seconds)
            self.close_connection = True
            return
        if mode in ("403", "404", "429", "500", "500once"):
            return self.status_only(entry, 500 if mode == "500once" else int(mode))
        if not os.path.isfile(file):
            return self.status_only(entry, 404)
        # Every file is version "v1"; "changed" answers as if it had been replaced by version "v2"
        # (every byte inverted): If-Match on anything else is refused, as servers do (unless told not to).
        style = self.server.owner.style
        version = "v2" if mode == "changed" else "v1"
        etag = {"strong": f'"{version}"', "weak": f'W/"{version}"', None: None}[style["etag"]]
        wanted = self.headers.get("If-Match")
        if style["if_match"] and wanted is not None and wanted.strip() not in (etag, "*"):
            return self.status_only(entry, 412)
        if mode == "changed" and os.path.isfile(file + ".v2"):
            file = file + ".v2"
        size = os.path.getsize(file)
        rng = parse_range(self.headers.get("Range"), size) if style["ranges"] and mode != "whole" else None
        if rng == "bad":
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            entry["status"] = 416
            return
        begin, end = rng or (0, size)
        self.send_response(206 if rng else 200)
        self.send_header("Accept-Ranges", "bytes")
        if etag:
            self.send_header("ETag", etag)
        if style["last_modified"]:
            second = 1 if version == "v1" else 2
            self.send_header("Last-Modified", f"Tue, 01 Dec 2026 00:00:0{second} GMT")
        if rng:
            self.send_header("Content-Range", f"bytes {begin}-{end - 1}/{size}")
        self.send_header("Content-Length", str(end - begin))
        self.end_headers()
        entry["status"] = 206 if rng else 200
        if head:
            return
        self.body(entry, mode, file, begin, end)

    @staticmethod
    def replacement(file, begin, end, data):
        """Version 2 of `file` when there is no FILE.v2 (served instead when there is): every byte inverted."""
        return data if file.endswith(".v2") else bytes(b ^ 0xFF for b in data)

    def body(self, entry, mode, file, begin, end):
        with open(file, "rb") as f:
            f.seek(begin)
            data = f.read(end - begin)
        if mode == "changed":
            data = self.replacement(file, begin, end, data)
        if mode == "stall":  # headers sent, then nothing for a long time
            self.wfile.flush()
            self.server.owner.stopping.wait(self.server.owner.stall_seconds)
            self.close_connection = True
            return
        if mode == "trickle":  # headers sent, then 2 bytes a second: a link that is all but dead
            for at in range(0, min(len(data), 2 * self.server.owner.stall_seconds), 2):
                if self.server.owner.stopping.wait(1):
                    break
                self.wfile.write(data[at:at + 2])
                self.wfile.flush()
            self.close_connection = True
            return
        if mode in ("drop", "truncate"):
            # drop: half the body, then the connection reset; truncate: all but the last
            # byte (the Content-Length promised more), then closed cleanly.
            data = data[:len(data) // 2] if mode == "drop" else data[:-1]
            self.wfile.write(data)
            self.wfile.flush()
            entry["bytes"] = len(data)
            if mode == "drop":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.close_connection = True
            return
        self.wfile.write(data)
        entry["bytes"] = len(data)


class _ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


class Faults(Server):
    """The faulty server: `base`, `url(key)`, `fault_url(mode, key)`, `fault()`, `requests()`."""

    def __init__(self, root, stall_seconds=60):
        self.root = root
        self.stall_seconds = stall_seconds
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.log = []
        self.rules = []  # (path prefix, Fault), set by fault()
        self.connection_rules = []  # Faults applied at accept (only "silent")
        self.prefix_faults = {}  # path -> Fault for the /MODE/ prefixes ("500once" keeps its count per path)
        self.style = dict(DEFAULT_STYLE)  # the validators sent and honoured, set by validators()
        self.httpd = _ThreadingServer(("127.0.0.1", 0), FaultHandler)
        self.httpd.owner = self
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"

    def fault_url(self, mode, key):
        """The URL of `key` served with `mode` (one of FAULTS) from its first request on."""
        assert mode in FAULTS, mode
        return f"{self.base}/{mode}/{key.lstrip('/')}"

    def fault(self, mode, prefix="/", after=0, times=None):
        """From now on, requests whose path starts with `prefix` misbehave as `mode` after `after` good
        ones, `times` times (None: forever). "silent" applies to new connections, whatever their path."""
        with self.lock:
            if mode == "silent":
                self.connection_rules.append(Fault(mode, after, times))
            else:
                self.rules.append(("/" + prefix.lstrip("/"), Fault(mode, after, times)))

    def validators(self, etag="strong", last_modified=False, if_match=True, ranges=True):
        """What every answer carries from now on: `etag` "strong", "weak" or None; a Last-Modified or not;
        whether If-Match is honoured (412) or ignored; whether Range is (206) or the whole file sent (200)."""
        with self.lock:
            self.style = {"etag": etag, "last_modified": last_modified, "if_match": if_match, "ranges": ranges}

    def clear(self):
        with self.lock:
            self.style = dict(DEFAULT_STYLE)
            self.rules.clear()
            self.connection_rules.clear()
            self.prefix_faults.clear()

    def next_connection_fault(self):
        with self.lock:
            for rule in self.connection_rules:
                if rule.fires():
                    return rule.mode
        return None

    def choose(self, path, prefix_mode):
        with self.lock:
            for prefix, rule in self.rules:
                if path.startswith(prefix) and rule.fires():
                    return rule.mode
            if prefix_mode is None:
                return None
            times = 1 if prefix_mode == "500once" else None
            rule = self.prefix_faults.setdefault(path, Fault(prefix_mode, 0, times))
            return prefix_mode if rule.fires() else None

    def record(self, entry):
        with self.lock:
            self.log.append(entry)

    def requests(self, prefix=None):
        """Entries as nginx's requests() gives them (method, uri, status, range, bytes), plus "fault"."""
        with self.lock:
            entries = list(self.log)
        return under(entries, prefix)


@contextlib.contextmanager
def serving(httpd, before_stop=None):
    """Runs `httpd` (a threaded HTTP server) in a thread until the block ends; `before_stop` first ends what
    would keep it from stopping (stalled answers)."""
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        if before_stop:
            before_stop()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@contextlib.contextmanager
def faults(root=None, stall_seconds=60):
    """Starts the faulty server over `root` (a new temp dir when None) in a thread; yields a Faults.
    Stalled answers end when the block ends."""
    with contextlib.ExitStack() as stack:
        if root is None:
            root = stack.enter_context(tempfile.TemporaryDirectory(prefix="mb-faults-"))
        server = Faults(os.path.abspath(root), stall_seconds)
        with serving(server.httpd, server.stopping.set):
            yield server



# --- a faulty proxy in front of s3rver ----------------------------------------

OTHER_COMMIT = '{"written by": "another run"}\n'  # what S3Proxy's "taken" puts


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self):
        owner = self.server.owner
        with owner.idle:
            owner.in_flight += 1
        try:
            self.relay_request(owner)
        finally:
            with owner.idle:
                owner.in_flight -= 1
                owner.idle.notify_all()

    def relay_request(self, owner):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if len(body) < length:  # the client died mid-send: a store never sees half a request
            self.close_connection = True
            return None
        mode = owner.choose(self.command, self.path)
        owner.record((self.command, self.path, mode))
        with owner.lock:
            owner.headers_seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        conditional = owner.conditional and self.command == "PUT" and self.headers.get("If-None-Match") == "*"
        if conditional:
            with owner.commits:  # the check and the write as one, as a store that honours the header
                if mode == "taken":  # another run commits this key just before
                    owner.put_other(self.path)
                if owner.exists(self.path):
                    return self.send_xml(412, b"<Error><Code>PreconditionFailed</Code><Message>At least one of the "
                                              b"pre-conditions you specified did not hold</Message></Error>")
                return self.relay(mode, body)
        return self.relay(mode, body)

    def send_xml(self, status, reply):
        self.send_response(status)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def relay(self, mode, body):
        owner = self.server.owner
        if mode == "slow":
            time.sleep(0.5)
        if mode in ("500", "403"):
            reply = (b"<Error><Code>InternalError</Code><Message>injected</Message></Error>" if mode == "500" else
                     b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>")
            self.send_response(int(mode))
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)
            return
        conn = http.client.HTTPConnection("127.0.0.1", owner.target_port, timeout=120)
        # The Host header goes through as the client signed it: s3rver checks the signature against it.
        conn.request(self.command, self.path, body=body, headers={k: v for k, v in self.headers.items()
                                                                  if k.lower() != "expect"})
        answer = conn.getresponse()
        data = answer.read()
        if mode == "held":  # the store did it; its answer waits until the test lets it go
            owner.holding.set()
            owner.release.wait(timeout=120)
        if mode == "lost":  # the store did it; its answer is lost on the way back
            conn.close()
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "kms":  # as under SSE-KMS: ETags that look like MD5s and are not the bytes' (in a body too)
            data = re.sub(rb"<ETag>(&quot;|\")?([0-9a-f]{32})",
                          lambda m: m.group(0)[:-32] + hashlib.md5(m.group(2)).hexdigest().encode(), data)
        self.send_response(answer.status)
        if mode == "kms":
            self.send_header("x-amz-server-side-encryption", "aws:kms")
        for k, v in answer.getheaders():
            if k.lower() in ("connection", "transfer-encoding", "keep-alive") or \
                    (k.lower() == "content-length" and self.command != "HEAD"):  # a HEAD's tells the object's
                continue
            if k.lower() == "etag" and mode == "etag":
                v = '"0123456789abcdef0123456789abcdef"'
            if k.lower() == "etag" and mode == "kms":
                v = '"' + hashlib.md5(v.encode()).hexdigest() + '"'
            self.send_header(k, v)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward


class S3Proxy:
    """Forwards to `s3` (an S3); `fault(method, contains, mode, times)` makes matching requests
    (method, and `contains` in the path and query) answer 500 or 403 without reaching s3rver ("500",
    "403"), reach it
    and come back with a wrong ETag ("etag") or as under SSE-KMS (an ETag that is not the MD5 and the
    x-amz-server-side-encryption: aws:kms header: "kms"), reach it half a second late ("slow"), reach it
    and come back as a 500 all the same ("lost"), or reach it and come back once `release` is set
    ("held"; `holding` is set while it waits). With `conditional`, a PUT with If-None-Match: * over a key
    that exists is answered 412, as S3 does and s3rver does not; "taken" then has another object put at that
    key just before (another run's commit). `requests()` lists (method, path, mode)."""

    def __init__(self, s3, conditional=False):
        self.s3, self.target_port, self.conditional = s3, s3.port, conditional
        self.commits = threading.Lock()
        self.lock = threading.Lock()
        self.headers_seen = []  # (method, path, headers in lower case) of every request
        self.rules, self.log = [], []
        self.holding, self.release = threading.Event(), threading.Event()  # of a "held" answer
        self.in_flight, self.idle = 0, threading.Condition()  # requests being relayed
        self.httpd = _ThreadingServer(("127.0.0.1", 0), ProxyHandler)
        self.httpd.owner = self
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def fault(self, method, contains, mode, times=1):
        with self.lock:
            self.rules.append([method, contains, mode, times])

    def choose(self, method, path):
        with self.lock:
            for rule in self.rules:
                if rule[0] == method and rule[1] in path and rule[3] > 0:
                    rule[3] -= 1
                    return rule[2]
        return None

    def record(self, entry):
        with self.lock:
            self.log.append(entry)

    def key_of(self, path):
        """("bucket", "key") of a path-style request path."""
        bucket, _, key = urllib.parse.unquote(path.split("?")[0]).lstrip("/").partition("/")
        return bucket, key

    def exists(self, path):
        bucket, key = self.key_of(path)
        return os.path.exists(os.path.join(self.s3.root, bucket, key + "._S3rver_object"))

    def put_other(self, path):
        bucket, key = self.key_of(path)
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write(OTHER_COMMIT)
            f.flush()
            self.s3.put(f.name, key, bucket=bucket)

    def requests(self):
        with self.lock:
            return list(self.log)

    def wait_idle(self, timeout=60):
        """Waits until no request is being relayed: a client killed mid-request leaves the proxy finishing
        it (the store may still do it), and what the store holds is final only then."""
        with self.idle:
            assert self.idle.wait_for(lambda: self.in_flight == 0, timeout), "the proxy did not become idle"


@contextlib.contextmanager
def s3_proxy(s3_server, conditional=False):
    """A faulty S3Proxy in front of `s3_server` (an S3), in a thread."""
    proxy = S3Proxy(s3_server, conditional)
    with serving(proxy.httpd):
        yield proxy


class PythonHttp(Server):
    """`python3 -m http.server` over `root`: it answers every GET with the whole file (no Range)."""

    def __init__(self, root, log):
        self.root, self.log = root, log
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def requests(self, prefix=None):
        """Its log lines ('"GET /uri HTTP/1.1" 200 -') as dicts: method, uri, status."""
        entries = []
        with open(self.log) as f:
            for m in re.finditer(r'"(\w+) (\S+) HTTP/[\d.]+" (\d+)', f.read()):
                entries.append({"method": m.group(1), "uri": m.group(2), "status": int(m.group(3))})
        return under(entries, prefix)


@contextlib.contextmanager
def python_http(root=None):
    """Starts Python's own http.server over `root` (a new temp dir when None); yields a PythonHttp."""
    with tempfile.TemporaryDirectory(prefix="mb-pyhttp-") as state:
        root = os.path.abspath(root or os.path.join(state, "www"))
        os.makedirs(root, exist_ok=True)
        server = PythonHttp(root, os.path.join(state, "log"))
        with open(server.log, "w") as log, process_group(
                [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", root, str(server.port)],
                stdout=log, stderr=log) as proc:
            wait_for_port(server.port, proc, what="python3 -m http.server")
            yield server


@contextlib.contextmanager
def unreachable():
    """A URL base on 127.0.0.1 where nothing listens (the port is held bound, not listening, so that
    nothing else takes it meanwhile): connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


def main(argv):
    kinds = {"nginx": nginx, "s3": s3, "faults": faults}
    if len(argv) != 3 or argv[1] not in kinds:
        print(f"usage: {argv[0]} nginx|s3|faults DIR", file=sys.stderr)
        return 2
    with kinds[argv[1]](argv[2]) as server:
        print(server.base, getattr(server, "https_base", ""), getattr(server, "cert", ""), flush=True)
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # TERM ends the block as Ctrl-C does
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
        # timeout(1) and shells signal the whole group, often twice: the cleanup is not cut short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
