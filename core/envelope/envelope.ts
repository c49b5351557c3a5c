/**
 * The request envelope of SPEC "Common envelope": `{type, args, version, resource_version}`, and
 * `dry_run` (Note [Dry runs] in core/kernel/pipeline.ts).
 */
import { SvcError } from '../errors.js';
import { jsonTypeName } from '../validation.js';

export interface Envelope {
  type: string;
  args: unknown;
  version: number | undefined;
  resourceVersion: number | undefined;
  /** `dry_run: true`: answer what the request would do, and do nothing. */
  dryRun: boolean;
}

export function parseEnvelope(body: unknown, pathBase = '$'): Envelope {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new SvcError('parse-failed', `parsing Object failed, expected Object, but encountered ${jsonTypeName(body)}`, {
      path: pathBase,
    });
  }
  const o = body as Record<string, unknown>;
  if (!('type' in o)) throw new SvcError('parse-failed', 'key "type" not found', { path: pathBase });
  if (typeof o.type !== 'string') {
    throw new SvcError('parse-failed', `parsing Text failed, expected String, but encountered ${jsonTypeName(o.type)}`, {
      path: `${pathBase}.type`,
    });
  }
  if (!('args' in o)) throw new SvcError('parse-failed', 'key "args" not found', { path: pathBase });
  const int = (k: string): number | undefined => {
    const x = o[k];
    if (x === undefined || x === null) return undefined;
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 0) {
      throw new SvcError('parse-failed', `expected a non-negative integer, encountered ${jsonTypeName(x)}`, {
        path: `${pathBase}.${k}`,
      });
    }
    return x;
  };
  const dry = o.dry_run;
  if (dry !== undefined && dry !== null && typeof dry !== 'boolean') {
    throw new SvcError('parse-failed', `parsing Bool failed, expected Boolean, but encountered ${jsonTypeName(dry)}`, { path: `${pathBase}.dry_run` });
  }
  return { type: o.type, args: o.args, version: int('version'), resourceVersion: int('resource_version'), dryRun: dry === true };
}
