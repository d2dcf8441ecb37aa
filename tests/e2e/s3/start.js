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
// s3rver's differences from S3 that matter to microbatch are patched as in the try-out server
// (examples/s3/s3rver-fixes.js): listed keys escaped once, "Range: bytes=N-0", listings of more than 1,000 keys,
// AbortMultipartUpload.
const fixes = require('../../../examples/s3/s3rver-fixes.js');
fixes.patch(require);
const S3rver = require('@20minutes/s3rver');
const { DUMMY_ACCOUNT } = require('@20minutes/s3rver/lib/models/account');

const [port, directory, keyId, secret, tokensFile] = process.argv.slice(2);
if (keyId) DUMMY_ACCOUNT.createKeyPair(keyId, secret);
const TEMPORARY_KEYS = 64;  // ../aws_fakes.py's temporary_key(i), i < TEMPORARY_KEYS
for (let i = 0; i < TEMPORARY_KEYS; i++) {
  const n = String(i).padStart(6, '0');
  DUMMY_ACCOUNT.createKeyPair(`ASIATEMP${n}`, `temporary/secret+${n}`);
}

const { readFileSync } = require('node:fs');
const { refuse } = fixes;
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

const server = new S3rver({
  port: Number(port), address: '127.0.0.1', directory, silent: true,
  configureBuckets: [{ name: 'bkt' }, { name: 'public' }],
});
server.middleware.unshift(authorize, fixes.abortUpload(directory));  // before s3rver's own: Koa composes them when it listens
server
  .run()
  .then(() => console.log('ready'))
  .catch((err) => { console.error(`s3rver: ${err.message}`); process.exit(1); });
