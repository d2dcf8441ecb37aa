// Starts s3rver (it verifies AWS Signature V4; credentials S3RVER / S3RVER) on
// 127.0.0.1:PORT over DIRECTORY with one bucket, "bkt", and prints "ready"
// once it listens. Used by ../servers.py: node start.js PORT DIRECTORY
const S3rver = require('@20minutes/s3rver');

const [port, directory] = process.argv.slice(2);
new S3rver({ port: Number(port), address: '127.0.0.1', directory, silent: true, configureBuckets: [{ name: 'bkt' }] })
  .run()
  .then(() => console.log('ready'))
  .catch((err) => { console.error(`s3rver: ${err.message}`); process.exit(1); });
