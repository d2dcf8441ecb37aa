// Where s3rver 5.0.0 answers otherwise than S3, patched so that microbatch
// meets S3's behaviour. Shared by server.js (the try-out server) and the
// tests' server (tests/e2e/s3/start.js). `load` is the caller's require, so
// that the copy of s3rver patched is the one the caller runs.
const { createReadStream, existsSync, rmSync } = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');

function patch(load) {
  // s3rver escapes XML text twice (he.escape in the tagValueProcessor of an XMLBuilder that escapes too): a key
  // holding '&' is listed as "a&amp;amp;b", which S3 lists as "a&amp;b". The builders' own escaping is enough.
  load('he').escape = (text) => text;

  // s3rver reads "Range: bytes=N-0" as "bytes=N-" (its store takes an end of 0 for none) and sends the object
  // from N to its end; S3 sends the one byte asked for. Fixed here, in the store, for end 0.
  const FilesystemStore = load('@20minutes/s3rver/lib/stores/filesystem');
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

  // s3rver enciphers ListObjectsV2 continuation tokens with DES, which OpenSSL 3 keeps in its legacy provider:
  // every truncated listing (more than 1,000 keys) fails with InternalError. The tokens need only be opaque and
  // reversible: AES-128-CBC, with the 8-byte key and IV doubled, stands in.
  for (const name of ['createCipheriv', 'createDecipheriv']) {
    const real = crypto[name];
    crypto[name] = function (algorithm, key, iv, ...rest) {
      if (algorithm !== 'des') return real.call(this, algorithm, key, iv, ...rest);
      return real.call(this, 'aes-128-cbc', Buffer.concat([key, key]), Buffer.concat([iv, iv]), ...rest);
    };
  }
}

// An S3 error answer.
function refuse(ctx, status, code, message) {
  ctx.status = status;
  ctx.type = 'application/xml';
  ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
}

// s3rver answers AbortMultipartUpload (DELETE ?uploadId=) with 405 and keeps the parts; S3 deletes them. An
// upload in progress is a directory of s3rver's under `directory`: BUCKET/._S3rver_uploads/ID. A Koa middleware.
function abortUpload(directory) {
  return async (ctx, next) => {
    const id = ctx.query.uploadId;
    if (ctx.method !== 'DELETE' || id === undefined) return next();
    const bucket = ctx.path.split('/')[1];
    const dir = path.join(directory, bucket, '._S3rver_uploads', id);
    if (!/^[A-Za-z0-9_-]+$/.test(id) || !existsSync(dir)) {
      return refuse(ctx, 404, 'NoSuchUpload', 'The specified upload does not exist.');
    }
    rmSync(dir, { recursive: true });
    ctx.status = 204;
  };
}

module.exports = { patch, refuse, abortUpload };
