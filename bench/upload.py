"""The `upload` workload of bench/bench.py: `split -o s3://` against `split -o
DIR` followed by an upload of the same files with `curl --aws-sigv4`, on one
s3rver on loopback (tests/e2e/servers.py).

The upload runs `--uploads` curls at once (microbatch's default, 4), one PUT
per file: the fair baseline for split's own bounded concurrent uploads.
Goal: split -o s3:// takes at most 1.2x the longer of the two alone, and
less than their sum (the uploads overlap the writing)."""
import os
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import servers  # noqa: E402  (tests/e2e/servers.py: s3rver on a free loopback port)

UPLOADS = 4  # split --uploads default, and the curls run at once


def wall(cmd, env=None, before=None):
    """Seconds of one run of `cmd` (a shell string); `before` runs first, outside the timing."""
    if before:
        before()
    os.sync()
    start = time.perf_counter()
    out = subprocess.run(cmd, shell=True, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"failed: {cmd}\n{out.stderr}")
    return time.perf_counter() - start


def curl_upload(s3, directory, prefix, md5=False):
    """A shell command that PUTs every file of `directory` under `prefix`, UPLOADS at a time; with `md5`, each
    with the Content-MD5 header `openssl dgst -md5` computes (what split sends, and `aws s3 cp` does)."""
    curl = (f"curl -sS --fail-with-body --aws-sigv4 aws:amz:us-east-1:s3 -u {shlex.quote(servers.S3_KEY_ID)}:"
            f"{shlex.quote(servers.S3_SECRET)} -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -o /dev/null")
    url = shlex.quote(s3.url(prefix))
    if md5:
        one = (f'{curl} -H "Content-MD5: $(openssl dgst -md5 -binary "$1" | base64)" -T "$1" {url}"$1"')
        return f"cd {shlex.quote(directory)} && ls | xargs -P {UPLOADS} -I{{}} sh -c {shlex.quote(one)} sh {{}}"
    return f"cd {shlex.quote(directory)} && ls | xargs -P {UPLOADS} -I{{}} {curl} -T {{}} {url}{{}}"


def forget(s3, prefix):
    """Removes `prefix`'s objects from s3rver's disk (its store reads the disk on each request)."""
    shutil.rmtree(os.path.join(s3.root, servers.S3_BUCKET, prefix.strip("/")), ignore_errors=True)


def best(cmd, runs, env=None, before=None):
    return min(wall(cmd, env, before) for _ in range(runs))


def cpu_seconds(pid):
    """User + system CPU seconds the process `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def three_ways(s3, split, work, runs):
    """(seconds, s3rver CPU seconds per run) of `split` (a command to end with the output) -o DIR, the curl
    uploads of DIR, and `split` -o s3://."""
    local = os.path.join(work, "upload-mb")
    rows = {}
    for name, cmd, env, before in (
            ("split -o DIR", split + shlex.quote(local), None, lambda: shutil.rmtree(local, ignore_errors=True)),
            ("curl upload of DIR", curl_upload(s3, local, "curl/"), None, lambda: forget(s3, "curl/")),
            ("  with Content-MD5", curl_upload(s3, local, "curl/", md5=True), None, lambda: forget(s3, "curl/")),
            ("split -o s3://", split + s3.s3_url("mb/"), s3.env(os.environ), lambda: forget(s3, "mb/"))):
        cpu = cpu_seconds(s3.proc.pid)
        rows[name] = (best(cmd, runs, env, before), (cpu_seconds(s3.proc.pid) - cpu) / runs)
    forget(s3, "curl/")
    forget(s3, "mb/")
    shutil.rmtree(local, ignore_errors=True)
    return rows


def report(n, size, rows):
    alone, upload, remote = (rows[k][0] for k in ("split -o DIR", "curl upload of DIR", "split -o s3://"))
    longer, total = max(alone, upload), alone + upload
    print(f"  -n {n}: files of {size / n:.0f} MiB{' (multipart)' if size / n >= 16 else ''}")
    for name, (secs, cpu) in rows.items():
        print(f"    {name:22s} {secs:8.2f} s   s3rver CPU {cpu:6.2f} s", flush=True)
    print(f"    split -o s3://: {remote / longer:.2f}x the longer alone (goal <= 1.2x), "
          f"{remote / total:.2f}x the split followed by the upload (goal < 1x)")
    md5 = rows["  with Content-MD5"][0]
    print(f"    against the upload with Content-MD5: {remote / max(alone, md5):.2f}x the longer alone, "
          f"{remote / (alone + md5):.2f}x the split followed by the upload")


def bench_upload(work, binary, make, scale, runs):
    """The split three ways, at files under 16 MiB (single PUTs, as curl's) and over (multipart)."""
    src = os.path.join(work, f"upload-{scale:g}.h5")
    if not os.path.exists(src):
        make("contiguous", src, scale)
    size = os.path.getsize(src) / 2**20
    print(f"\nupload: {size:.0f} MiB contiguous, to s3rver on loopback; best of {runs}; {UPLOADS} uploads at once; "
          f"s3rver CPU: its seconds per run (it is one Node.js thread)")
    with servers.s3(os.path.join(work, "s3rver")) as s3:
        for n in (32, 8):
            split = f"{binary} split {shlex.quote(src)} -n {n} -q -o "
            report(n, size, three_ways(s3, split, work, runs))
