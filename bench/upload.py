"""The `upload` workload of bench/bench.py: `split -o s3://` against `split -o
DIR` followed by an upload of the same files with `curl --aws-sigv4`, on one
s3rver on loopback (tests/e2e/servers.py).

The upload runs `--uploads` curls at once (microbatch's default, 4), one PUT
per file: the fair baseline for split's own bounded concurrent uploads.
Goal: split -o s3:// takes at most 1.2x the longer of the two alone, and
less than their sum (the uploads overlap the writing)."""
import concurrent.futures
import os
import re
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


CURL = ["curl", "-sS", "--fail-with-body", "--aws-sigv4", "aws:amz:us-east-1:s3", "-u",
        f"{servers.S3_KEY_ID}:{servers.S3_SECRET}", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
PART = 8 << 20  # split's part size


def multipart_one(path, url):
    """One file as a multipart upload of 8 MiB parts, each part a curl fed from stdin, as split sends it."""
    answer = subprocess.run([*CURL, "-X", "POST", f"{url}?uploads="], capture_output=True, check=True).stdout
    upload = re.search(rb"<UploadId>([^<]+)</UploadId>", answer).group(1).decode()
    etags = []
    with open(path, "rb") as f:
        while part := f.read(PART):
            head = subprocess.run([*CURL, "-D", "-", "-o", "/dev/null", "-T", "-",
                                   f"{url}?partNumber={len(etags) + 1}&uploadId={upload}"], input=part,
                                  capture_output=True, check=True).stdout
            etags.append(re.search(rb"(?i)etag: *(\S+)", head).group(1).decode())
    done = "".join(f"<Part><PartNumber>{k + 1}</PartNumber><ETag>{e}</ETag></Part>" for k, e in enumerate(etags))
    subprocess.run([*CURL, "-o", "/dev/null", "-X", "POST", "--data-binary",
                    f"<CompleteMultipartUpload>{done}</CompleteMultipartUpload>", f"{url}?uploadId={upload}"],
                   capture_output=True, check=True)


def multipart_upload(directory, base):
    """Every file of `directory` under the URL `base` as multipart uploads, UPLOADS files at once."""
    names = sorted(os.listdir(directory))
    with concurrent.futures.ThreadPoolExecutor(UPLOADS) as pool:
        list(pool.map(lambda n: multipart_one(os.path.join(directory, n), base + n), names))


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


def three_ways(s3, split, work, runs, multipart):
    """(seconds, s3rver CPU seconds per run) of `split` (a command to end with the output) -o DIR, the curl
    uploads of DIR (and, for `multipart` files, curl's multipart uploads of them), and `split` -o s3://."""
    local = os.path.join(work, "upload-mb")
    commands = [
        ("split -o DIR", split + shlex.quote(local), None, lambda: shutil.rmtree(local, ignore_errors=True)),
        ("curl upload of DIR", curl_upload(s3, local, "curl/"), None, lambda: forget(s3, "curl/")),
        ("  with Content-MD5", curl_upload(s3, local, "curl/", md5=True), None, lambda: forget(s3, "curl/"))]
    if multipart:
        commands.append(("  as multipart uploads", f"{shlex.quote(sys.executable)} {shlex.quote(__file__)} multipart "
                         f"{shlex.quote(local)} {shlex.quote(s3.url('curl/'))}", None, lambda: forget(s3, "curl/")))
    commands.append(("split -o s3://", split + s3.s3_url("mb/"), s3.env(os.environ), lambda: forget(s3, "mb/")))
    rows = {}
    for name, cmd, env, before in commands:
        cpu = cpu_seconds(s3.proc.pid)
        rows[name] = (best(cmd, runs, env, before), (cpu_seconds(s3.proc.pid) - cpu) / runs)
    forget(s3, "curl/")
    forget(s3, "mb/")
    shutil.rmtree(local, ignore_errors=True)
    return rows


def report(n, size, rows):
    alone, remote = rows["split -o DIR"][0], rows["split -o s3://"][0]
    print(f"  -n {n}: files of {size / n:.0f} MiB{' (multipart)' if size / n >= 16 else ''}")
    for name, (secs, cpu) in rows.items():
        print(f"    {name:22s} {secs:8.2f} s   s3rver CPU {cpu:6.2f} s", flush=True)
    for name, against in (("curl upload of DIR", "the upload"), ("  with Content-MD5", "the upload with Content-MD5"),
                          ("  as multipart uploads", "curl's multipart uploads")):
        if name in rows:
            upload = rows[name][0]
            print(f"    against {against}: {remote / max(alone, upload):.2f}x the longer alone (goal <= 1.2x), "
                  f"{remote / (alone + upload):.2f}x the split followed by the upload (goal < 1x)")


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
            report(n, size, three_ways(s3, split, work, runs, multipart=size / n >= 16))


if __name__ == "__main__":  # python3 upload.py multipart DIR URL: the multipart baseline, timed as one command
    multipart_upload(sys.argv[2], sys.argv[3])
