"""The AWS endpoints a credential chain asks, faked on 127.0.0.1 in one threaded server, each handing out
temporary credentials that the test S3 server (servers.S3.issue) accepts until they expire:

- STS at /sts/ (AWS_ENDPOINT_URL_STS): AssumeRole, whose Signature V4 is verified against the secrets it
  knows (the test keys and every temporary key), and AssumeRoleWithWebIdentity, whose token must be `web_token`;
- the container endpoint at /container/credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI), which wants
  `container_token` as its Authorization header;
- EC2's instance metadata (IMDSv2) at / (AWS_EC2_METADATA_SERVICE_ENDPOINT): a session token from a PUT, then
  the role and its credentials with that token.

`lifetime` is how long what they hand out lives; `calls` records (what, detail) per answer."""

import contextlib
import hashlib
import hmac
import http.server
import json
import threading
import urllib.parse

import servers

ROLE = "mb-instance-role"


def verify_sigv4(method, path, query, headers, body, secrets):
    """The key id of a valid Signature V4 Authorization header (AWS4-HMAC-SHA256) over this request, else None."""
    auth = headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return None
    fields = dict(part.strip().split("=", 1) for part in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    key_id, day, region, service, _ = fields["Credential"].split("/")
    if key_id not in secrets:
        return None
    signed = fields["SignedHeaders"].split(";")
    canonical_headers = "".join(f"{h}:{' '.join(headers.get(h, '').split())}\n" for h in signed)
    pairs = sorted(urllib.parse.parse_qsl(query, keep_blank_values=True))
    canonical_query = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                               for k, v in pairs)
    payload = headers.get("x-amz-content-sha256") or hashlib.sha256(body).hexdigest()
    canonical = "\n".join([method, urllib.parse.quote(path, safe="/-_.~"), canonical_query, canonical_headers,
                           fields["SignedHeaders"], payload])
    stamp = headers.get("x-amz-date", "")
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + secrets[key_id]).encode()
    for part in (day, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    return key_id if hmac.compare_digest(expected, fields["Signature"]) else None


def sts_answer(action, creds):
    return (f'<{action}Response xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><{action}Result><Credentials>'
            f'<AccessKeyId>{creds["AccessKeyId"]}</AccessKeyId><SecretAccessKey>{creds["SecretAccessKey"]}'
            f'</SecretAccessKey><SessionToken>{creds["Token"]}</SessionToken><Expiration>{creds["Expiration"]}'
            f'</Expiration></Credentials></{action}Result></{action}Response>')


def sts_error(code, message):
    return f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error></ErrorResponse>"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="text/plain"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def headers_lower(self):
        return {k.lower(): v for k, v in self.headers.items()} | {"Authorization": self.headers.get("Authorization", "")}

    def do_POST(self):
        fakes = self.server.fakes
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        url = urllib.parse.urlsplit(self.path)
        if not url.path.startswith("/sts"):
            return self.reply(404, "no such endpoint")
        form = dict(urllib.parse.parse_qsl(body.decode()))
        action = form.get("Action")
        if action == "AssumeRole":
            signer = verify_sigv4("POST", url.path, url.query, self.headers_lower(), body, fakes.secrets())
            if signer is None:
                return self.reply(403, sts_error("SignatureDoesNotMatch", "not signed by a known key"), "text/xml")
            fakes.record("AssumeRole", {"role": form.get("RoleArn"), "signer": signer,
                                        "session": form.get("RoleSessionName"), "external_id": form.get("ExternalId")})
        elif action == "AssumeRoleWithWebIdentity":
            if form.get("WebIdentityToken") != fakes.web_token:
                return self.reply(400, sts_error("InvalidIdentityToken", "wrong token"), "text/xml")
            fakes.record("AssumeRoleWithWebIdentity", {"role": form.get("RoleArn"), "session": form.get("RoleSessionName")})
        else:
            return self.reply(400, sts_error("InvalidAction", str(action)), "text/xml")
        self.reply(200, sts_answer(action, fakes.s3.issue(fakes.lifetime)), "text/xml")

    def do_PUT(self):
        fakes = self.server.fakes
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/latest/api/token" or not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.reply(400, "bad token request")
        fakes.record("imds-token", None)
        self.reply(200, fakes.imds_token)

    def do_GET(self):
        fakes = self.server.fakes
        if self.path == "/container/credentials":
            if self.headers.get("Authorization") != fakes.container_token:
                return self.reply(401, "wrong authorization")
            fakes.record("container", None)
            return self.reply(200, json.dumps(fakes.s3.issue(fakes.lifetime)), "application/json")
        base = "/latest/meta-data/iam/security-credentials/"
        if self.path.startswith(base):
            if self.headers.get("X-aws-ec2-metadata-token") != fakes.imds_token:
                return self.reply(401, "no session token")
            if self.path == base:
                return self.reply(200, ROLE)
            if self.path == base + ROLE:
                fakes.record("imds", None)
                creds = dict(fakes.s3.issue(fakes.lifetime), Code="Success", Type="AWS-HMAC",
                             LastUpdated="2026-01-01T00:00:00Z")
                return self.reply(200, json.dumps(creds), "application/json")
        self.reply(404, "no such endpoint")


class _Threading(http.server.ThreadingHTTPServer):
    daemon_threads = True


class Fakes:
    def __init__(self, s3, port):
        self.s3 = s3
        self.endpoint = f"http://127.0.0.1:{port}"
        self.lifetime = 3600
        self.web_token = "mb-web-identity-token.eyJhbGciOi"
        self.container_token = "Bearer mb-container-token"
        self.imds_token = "mb-imds-session-token"
        self.calls = []
        self.lock = threading.Lock()

    def secrets(self):
        known = {servers.S3_KEY_ID: servers.S3_SECRET}
        known.update(servers.temporary_key(i) for i in range(64))
        return known

    def record(self, what, detail):
        with self.lock:
            self.calls.append((what, detail))

    def count(self, what):
        with self.lock:
            return sum(1 for w, _ in self.calls if w == what)

    def env(self):
        """Where a chain finds these endpoints (the container endpoint only when a test names it)."""
        return {"AWS_ENDPOINT_URL_STS": self.endpoint + "/sts/", "AWS_EC2_METADATA_SERVICE_ENDPOINT": self.endpoint}


@contextlib.contextmanager
def aws_fakes(s3):
    """The fakes, serving temporary credentials of `s3` (a servers.S3), until the block ends."""
    httpd = _Threading(("127.0.0.1", 0), Handler)
    httpd.fakes = Fakes(s3, httpd.server_address[1])
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.fakes
    finally:
        httpd.shutdown()
        httpd.server_close()
