/**
 * valibot with JSON's notion of an object: plugins import `* as v` from here, not from 'valibot'.
 *
 * valibot's object and record schemas accept arrays (to JavaScript an array is an object), so
 * `configuration: []` or `select: ["x"]` would pass as an empty object and be silently dropped;
 * Hasura's (aeson) parsers refuse them. Its record schema also skips the keys `__proto__`,
 * `constructor` and `prototype` without a word; here they are refused, so nothing the client sent
 * disappears unnoticed (Note [Request limits] in lib/http/body.ts refuses `__proto__` anywhere).
 */
import * as v from 'valibot';

export * from 'valibot';

type Run = (dataset: v.UnknownDataset, config: v.Config<v.BaseIssue<unknown>>) => v.OutputDataset<unknown, v.BaseIssue<unknown>>;

/** A copy of `schema` (getters included) whose `~run` first applies `check`. */
function guarded<S extends v.GenericSchema>(schema: S, check: (self: S, dataset: v.UnknownDataset, config: v.Config<v.BaseIssue<unknown>>) => boolean): S {
  const copy = Object.create(Object.getPrototypeOf(schema), Object.getOwnPropertyDescriptors(schema)) as S;
  const run = schema['~run'] as unknown as Run;
  (copy as unknown as { '~run': Run })['~run'] = function (this: S, dataset, config) {
    if (!check(this, dataset, config)) return dataset as unknown as v.OutputDataset<unknown, v.BaseIssue<unknown>>;
    return run.call(this, dataset, config);
  };
  return copy;
}

function notArray(self: v.GenericSchema, dataset: v.UnknownDataset, config: v.Config<v.BaseIssue<unknown>>): boolean {
  if (!Array.isArray(dataset.value)) return true;
  v._addIssue(self as never, 'type', dataset, config);
  return false;
}

const RESERVED_KEYS = ['__proto__', 'constructor', 'prototype'];

export const object: typeof v.object = ((...args: Parameters<typeof v.object>) => guarded(v.object(...args), notArray)) as typeof v.object;
export const looseObject: typeof v.looseObject = ((...args: Parameters<typeof v.looseObject>) => guarded(v.looseObject(...args), notArray)) as typeof v.looseObject;
export const strictObject: typeof v.strictObject = ((...args: Parameters<typeof v.strictObject>) => guarded(v.strictObject(...args), notArray)) as typeof v.strictObject;
export const record: typeof v.record = ((...args: Parameters<typeof v.record>) =>
  guarded(v.record(...args), (self, dataset, config) => {
    if (!notArray(self, dataset, config)) return false;
    const value = dataset.value;
    if (value === null || typeof value !== 'object') return true;
    const bad = RESERVED_KEYS.find((k) => Object.prototype.hasOwnProperty.call(value, k));
    if (bad === undefined) return true;
    v._addIssue(self as never, 'key', dataset, config, { input: bad, message: `"${bad}" is not supported as a key here` });
    return false;
  })) as typeof v.record;

/**
 * `schema`'s checks with the value kept as it was given: its issues (paths and all) when it does
 * not parse, else the input itself, not `schema`'s output (whose keys come in the schema's order,
 * its transforms applied). Where a document must read back as it was written (replace_metadata
 * then export_metadata) but must not hold what the operation that writes the same part refuses.
 */
export function checkedAsGiven(schema: v.GenericSchema): v.GenericSchema {
  const base = v.unknown();
  const copy = Object.create(Object.getPrototypeOf(base), Object.getOwnPropertyDescriptors(base)) as v.GenericSchema;
  const run = schema['~run'] as unknown as Run;
  (copy as unknown as { '~run': Run })['~run'] = function (dataset, config) {
    const out = run.call(schema, { value: dataset.value } as v.UnknownDataset, config);
    return out.issues ? out : ({ typed: true, value: dataset.value } as v.OutputDataset<unknown, v.BaseIssue<unknown>>);
  };
  return copy;
}
