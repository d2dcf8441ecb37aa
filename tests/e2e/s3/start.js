// Starts s3rver (it verifies AWS Signature V4) on 127.0.0.1:PORT over
// DIRECTORY with two buckets, "bkt" and "public", and prints "ready" once it
// listens. As AWS does and s3rver does not: an unsigned request is refused
// (403 AccessDenied) except a read of "public" (a public bucket), and a
// temporary key ("ASIA...", one of TEMPORARY_KEYS, each known with its
// secret) must come with the session token it was issued with, unexpired:
// the fakes of ../aws_fakes.py issue them and write them to TOKENS_FILE
// ({"ASIA...": {"token": T, "expires": unix seconds}}), read at each request.
// Used by ../servers.py: node start.js PORT DIRECTORY [KEY_ID SECRET]
// s3rver knows the credentials S3RVER / S3RVER; KEY_ID / SECRET are added to
// them, so that a test can look for a secret that appears nowhere else.
// s3rver 5.0.0 escapes XML text twice (he.escape in the tagValueProcessor of an XMLBuilder that escapes too):
// a key holding '&' is listed as "a&amp;amp;b", which S3 lists as "a&amp;b". The builders' own escaping is enough.
require('he').escape = (text) => text;
const S3rver = require('@20minutes/s3rver');
const { DUMMY_ACCOUNT } = require('@20minutes/s3rver/lib/models/account');

// s3rver 5.0.0 reads "Range: bytes=N-0" as "bytes=N-" (its store takes an end of 0 for none) and sends
// the object from N to its end; S3 sends the one byte asked for. Fixed here, in the store, for end 0.
const { createReadStream } = require('node:fs');
const FilesystemStore = require('@20minutes/s3rver/lib/stores/filesystem');
const getObject = FilesystemStore.prototype.getObject;
FilesystemStore.prototype.getObject = async function (bucket, key, options) {
  const object = await getObject.call(this, bucket, key, options);
  if (object && object.content && object.range && options && options.end === 0) {
    object.content.destroy();
    object.range = { start: object.range.start, end: 0 };
    object.content = createReadStream(this.getResourcePath(bucket, key, 'object'), object.range);
  }
  return object;
};

// s3rver 5.0.0 enciphers ListObjectsV2 continuation tokens with DES, which OpenSSL 3 keeps in its legacy
// provider: every truncated listing (more than 1,000 keys) fails with InternalError. The tokens need only be
// opaque and reversible: AES-128-CBC, with the 8-byte key and IV doubled, stands in.
const crypto = require('node:crypto');
for (const name of ['createCipheriv', 'createDecipheriv']) {
  const real = crypto[name];
  crypto[name] = function (algorithm, key, iv, ...rest) {
    if (algorithm !== 'des') return real.call(this, algorithm, key, iv, ...rest);
    return real.call(this, 'aes-128-cbc', Buffer.concat([key, key]), Buffer.concat([iv, iv]), ...rest);
  };
}

const [port, directory, keyId, secret, tokensFile] = process.argv.slice(2);
if (keyId) DUMMY_ACCOUNT.createKeyPair(keyId, secret);
const TEMPORARY_KEYS = 64;  // ../aws_fakes.py's temporary_key(i), i < TEMPORARY_KEYS
for (let i = 0; i < TEMPORARY_KEYS; i++) {
  const n = String(i).padStart(6, '0');
  DUMMY_ACCOUNT.createKeyPair(`ASIATEMP${n}`, `temporary/secret+${n}`);
}

const { readFileSync } = require('node:fs');
function refuse(ctx, status, code, message) {
  ctx.status = status;
  ctx.type = 'application/xml';
  ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
}
async function authorize(ctx, next) {
  const auth = ctx.get('authorization');
  const credential = auth ? (auth.match(/Credential=([^/,\s]+)\//) || [])[1] : (ctx.query['X-Amz-Credential'] || '').split('/')[0];
  if (!credential) {
    const read = ctx.method === 'GET' || ctx.method === 'HEAD';
    if (read && (ctx.path === '/public' || ctx.path.startsWith('/public/'))) return next();
    return refuse(ctx, 403, 'AccessDenied', 'Anonymous requests are refused');
  }
  if (credential.startsWith('ASIA')) {
    const issued = tokensFile ? JSON.parse(readFileSync(tokensFile, 'utf8') || '{}')[credential] : undefined;
    const token = ctx.get('x-amz-security-token') || ctx.query['X-Amz-Security-Token'];
    if (!issued || token !== issued.token) return refuse(ctx, 403, 'InvalidToken', 'The provided token is malformed or otherwise invalid.');
    if (Date.now() / 1000 > issued.expires) return refuse(ctx, 400, 'ExpiredToken', 'The provided token has expired.');
  }
  return next();
}

// s3rver 5.0.0 answers AbortMultipartUpload (DELETE ?uploadId=) with 405 and keeps the parts; S3 deletes them.
// An upload in progress is a directory of s3rver's (BUCKET/._S3rver_uploads/ID, ../servers.py's
// S3.uploads_in_progress lists them).
const { rmSync, existsSync } = require('node:fs');
const path = require('node:path');
async function abortUpload(ctx, next) {
  const id = ctx.query.uploadId;
  if (ctx.method !== 'DELETE' || id === undefined) return next();
  const bucket = ctx.path.split('/')[1];
  const dir = path.join(directory, bucket, '._S3rver_uploads', id);
  if (!/^[A-Za-z0-9_-]+$/.test(id) || !existsSync(dir)) return refuse(ctx, 404, 'NoSuchUpload', 'The specified upload does not exist.');
  rmSync(dir, { recursive: true });
  ctx.status = 204;
}

const server = new S3rver({
  port: Number(port), address: '127.0.0.1', directory, silent: true,
  configureBuckets: [{ name: 'bkt' }, { name: 'public' }],
});
server.middleware.unshift(authorize, abortUpload);  // before s3rver's own: Koa composes them when it listens
server
  .run()
  .then(() => console.log('ready'))
  .catch((err) => { console.error(`s3rver: ${err.message}`); process.exit(1); });
