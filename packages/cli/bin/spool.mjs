#!/usr/bin/env node
// The `spool` command. Its source is TypeScript, run through tsx as the rest of the repository.
import { register } from "tsx/esm/api";

// A reader that goes away (`spool runs list | head`) is not an error of ours: stop quietly.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });
}

register();
const { main } = await import("../src/main.ts");
process.exitCode = await main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`spool: ${err instanceof Error ? err.message : String(err)}\n`);
  return 1;
});
