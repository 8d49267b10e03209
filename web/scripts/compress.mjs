// Compresses the build's files once, so the server sends them as they are: name.br (brotli at
// its best) and name.gz (gzip -9) beside every text file over a kilobyte.
//
//   node scripts/compress.mjs dist
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const TEXT = /\.(js|mjs|css|json|svg|html|txt|map)$/;
const SMALLEST = 1024;

function* files(dir) {
  for (const name of readdirSync(dir)) {
    if (name.startsWith(".")) continue; // Vite's manifest and the server's files
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else yield path;
  }
}

const root = process.argv[2];
if (!root) throw new Error("usage: node scripts/compress.mjs DIR");
let raw = 0;
let brotli = 0;
for (const path of files(root)) {
  if (!TEXT.test(path)) continue;
  const body = readFileSync(path);
  if (body.length < SMALLEST) continue;
  const br = brotliCompressSync(body, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
    },
  });
  writeFileSync(`${path}.br`, br);
  writeFileSync(`${path}.gz`, gzipSync(body, { level: 9 }));
  raw += body.length;
  brotli += br.length;
}
console.log(`compressed ${(raw / 1024).toFixed(0)} kB of assets to ${(brotli / 1024).toFixed(0)} kB (brotli)`);
