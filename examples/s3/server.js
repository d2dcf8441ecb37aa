// The try-out S3 server that local-s3.sh starts: s3rver on 127.0.0.1:PORT
// (0: a free port) over DIRECTORY, with one bucket, BUCKET. It verifies AWS
// Signature V4 and knows one key pair, s3rver's own: S3RVER / S3RVER. Prints
// "ready http://127.0.0.1:PORT" once it listens.
//   node server.js PORT DIRECTORY BUCKET
const fixes = require('./s3rver-fixes.js');
fixes.patch(require);  // before s3rver is loaded, as it keeps what it loads
const S3rver = require('@20minutes/s3rver');

const [port, directory, bucket] = process.argv.slice(2);
const server = new S3rver({
  port: Number(port), address: '127.0.0.1', directory, silent: true, configureBuckets: [{ name: bucket }],
});
server.middleware.unshift(fixes.abortUpload(directory));  // before s3rver's own: Koa composes them when it listens
server
  .run()
  .then((address) => console.log(`ready http://127.0.0.1:${address.port}`))
  .catch((err) => { console.error(`s3rver: ${err.message}`); process.exit(1); });
