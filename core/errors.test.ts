/** The error table (core/errors.ts) agrees with the SPEC and with the table of docs/api.md, "Errors". */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, SvcError } from './errors.js';

const doc = readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');

describe('error table', () => {
  it('lists every code of SPEC "Errors"', () => {
    // Copied from ../shared/SPEC.md, section "Errors" (status table and code table).
    const specCodes = ['not-found', 'conflict', 'postgres-error', 'permission-denied', 'not-exists', 'already-tracked', 'access-denied', 'not-supported', 'already-exists', 'invalid-json', 'invalid-headers', 'dependency-error', 'parse-failed', 'already-initialised', 'constraint-error', 'permission-error', 'invalid-params', 'unexpected-payload', 'unexpected'];
    for (const code of specCodes) expect(ERROR_CODES, `code ${code}`).toHaveProperty(code);
  });

  it('docs/api.md documents exactly the codes of the table, with their statuses', () => {
    const start = doc.indexOf('<!-- error-codes:start -->');
    const end = doc.indexOf('<!-- error-codes:end -->');
    expect(start, 'the error-codes markers in docs/api.md').toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(start);
    const block = doc.slice(start, end);
    const rows = [...block.matchAll(/^\| `([a-z-]+)` \| (\d{3})/gm)].map((m) => [m[1]!, Number(m[2])] as const);
    expect(Object.fromEntries(rows)).toEqual(ERROR_CODES);
  });

  it('bodies: 400 has path/error/code, 500 only error', () => {
    expect(new SvcError('not-exists', 'x', { path: '$.args' }).toBody()).toEqual({ path: '$.args', error: 'x', code: 'not-exists' });
    expect(new SvcError('internal-error', 'boom').toBody()).toEqual({ error: 'boom' });
    expect(new SvcError('conflict', 'c').status).toBe(409);
    expect(new SvcError('unexpected', 'clash', { status: 500, path: '$.args' }).toBody()).toEqual({ path: '$.args', error: 'clash', code: 'unexpected' });
  });
});
