#!/usr/bin/env node
/** The `svc` executable (package.json `bin`): runs the command line of main.ts on this process. */
import { run } from './main.js';

const code = await run(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  cwd: process.cwd(),
});
process.exitCode = code;
