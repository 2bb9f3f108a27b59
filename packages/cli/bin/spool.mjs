#!/usr/bin/env node
// The `spool` command. Its source is TypeScript, run through tsx as the rest of the repository.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/main.ts");
process.exitCode = await main(process.argv.slice(2));
